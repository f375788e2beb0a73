"""The settings registry: types, defaults, bad values, attribute access and scoped overrides."""

from pathlib import Path

import pytest

from tilecraft import settings
from tilecraft.settings import Setting, SettingError

DECLARED = (
    "TILECRAFT_CACHE_DIR", "TILECRAFT_DISABLE_CACHE", "TILECRAFT_DUMP_IR", "TILECRAFT_PASS_TIMING",
    "TILECRAFT_VERBOSE", "TILECRAFT_CC", "TILECRAFT_NVCC", "TILECRAFT_TARGET",
)  # fmt: skip


def test_every_required_setting_is_declared():
    names = {s.name for s in settings.all_settings()}
    assert set(DECLARED) <= names


@pytest.mark.parametrize(
    "text,value", [("1", True), ("yes", True), ("TRUE", True), ("0", False), ("No", False)]
)
def test_bools_parse(monkeypatch, text, value):
    monkeypatch.setenv("TILECRAFT_VERBOSE", text)
    assert settings.get("TILECRAFT_VERBOSE") is value
    assert settings.verbose is value


def test_bad_bool_names_the_variable_and_the_valid_values(monkeypatch):
    monkeypatch.setenv("TILECRAFT_PASS_TIMING", "maybe")
    with pytest.raises(SettingError, match=r"TILECRAFT_PASS_TIMING='maybe'.*true.*false"):
        settings.get("TILECRAFT_PASS_TIMING")


def test_ints_parse_and_bad_ints_fail(monkeypatch):
    registry = settings.SettingsRegistry()
    registry.declare(Setting("TILECRAFT_TEST_JOBS", int, 4, "jobs"))
    assert registry.get("TILECRAFT_TEST_JOBS") == 4
    monkeypatch.setenv("TILECRAFT_TEST_JOBS", "12")
    assert registry.get("test_jobs") == 12
    monkeypatch.setenv("TILECRAFT_TEST_JOBS", "twelve")
    with pytest.raises(SettingError, match="TILECRAFT_TEST_JOBS='twelve' is not a valid int"):
        registry.get("TILECRAFT_TEST_JOBS")


def test_paths_expand_user(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TILECRAFT_DUMP_IR", "~/dumps")
    assert settings.dump_ir == tmp_path / "dumps"


def test_cache_dir_default_honours_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("TILECRAFT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert settings.cache_dir == tmp_path / "tilecraft"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert settings.cache_dir == tmp_path / "home" / ".cache" / "tilecraft"


def test_empty_variable_counts_as_unset(monkeypatch):
    monkeypatch.setenv("TILECRAFT_TARGET", "")
    assert settings.target is None


def test_override_is_scoped_and_restored_after_errors(tmp_path):
    before = settings.get("TILECRAFT_DUMP_IR")
    with pytest.raises(RuntimeError), settings.override(TILECRAFT_DUMP_IR=tmp_path, TILECRAFT_VERBOSE="yes"):
        assert settings.dump_ir == tmp_path
        assert settings.verbose is True
        raise RuntimeError
    assert settings.get("TILECRAFT_DUMP_IR") == before


def test_nested_overrides_restore_the_outer_value():
    with settings.override(TILECRAFT_TARGET="a"):
        with settings.override(TILECRAFT_TARGET="b"):
            assert settings.target == "b"
        assert settings.target == "a"
        with settings.override(TILECRAFT_TARGET=None):
            assert settings.target is None


def test_override_beats_environment(monkeypatch):
    monkeypatch.setenv("TILECRAFT_DISABLE_CACHE", "1")
    with settings.override(TILECRAFT_DISABLE_CACHE=False):
        assert settings.disable_cache is False
        assert settings.REGISTRY.source("TILECRAFT_DISABLE_CACHE") == "override"
    assert settings.disable_cache is True


def test_override_checks_types_and_names():
    with pytest.raises(SettingError, match="has type int"):
        settings.override(TILECRAFT_VERBOSE=3)
    with pytest.raises(SettingError, match="unknown setting 'TILECRAFT_NOPE'.*TILECRAFT_CACHE_DIR"):
        settings.override(TILECRAFT_NOPE=1)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="unknown setting"):
        settings.no_such_setting  # noqa: B018


def test_setting_declaration_is_validated():
    with pytest.raises(SettingError, match="must look like TILECRAFT_"):
        Setting("OTHER_THING", str, None, "")
    with pytest.raises(SettingError, match="allowed types: bool, int, Path, str"):
        Setting("TILECRAFT_X", float, None, "")
    with pytest.raises(SettingError, match="already declared differently"):
        settings.declare(Setting("TILECRAFT_VERBOSE", int, 0, "changed"))


def test_describe_lists_every_setting_and_shows_bad_values(monkeypatch):
    monkeypatch.setenv("TILECRAFT_VERBOSE", "maybe")
    table = settings.describe()
    for name in DECLARED:
        assert name in table
    assert "invalid: 'maybe'" in table
    assert isinstance(settings.cache_dir, Path)


def test_dump_ir_naming_a_file_is_an_error_at_use(tmp_path, monkeypatch):
    existing = tmp_path / "notes.txt"
    existing.write_text("")
    monkeypatch.setenv("TILECRAFT_DUMP_IR", str(existing))
    with pytest.raises(SettingError) as info:
        settings.get("TILECRAFT_DUMP_IR")
    assert f"TILECRAFT_DUMP_IR={str(existing)!r}" in str(info.value)
    assert "existing file, not a directory" in str(info.value)
    with settings.override(TILECRAFT_DUMP_IR=existing / "below"), pytest.raises(SettingError) as info:
        settings.get("TILECRAFT_DUMP_IR")
    assert f"{existing} is an existing file" in str(info.value)
    with settings.override(TILECRAFT_DUMP_IR=tmp_path / "new" / "dir"):
        assert settings.dump_ir == tmp_path / "new" / "dir"  # created when first written
    assert settings.get("TILECRAFT_DUMP_IR", check=False) == existing


def test_compiler_setting_must_name_a_program_that_exists(monkeypatch):
    import sys

    monkeypatch.setenv("TILECRAFT_CC", f"{sys.executable} -O0")
    assert settings.get("TILECRAFT_CC") == f"{sys.executable} -O0"
    for bad, message in (
        ("no-such-compiler-xyz -O2", "program 'no-such-compiler-xyz' was not found on PATH"),
        ("gcc '-O2", "cannot be read as a command line"),
        ("-O2", "names no program before its options"),
    ):
        monkeypatch.setenv("TILECRAFT_CC", bad)
        with pytest.raises(SettingError, match=f"TILECRAFT_CC=.*cannot be used: .*{message}"):
            settings.get("TILECRAFT_CC")


def test_problems_lists_bad_values_and_unknown_variables_without_raising(monkeypatch):
    monkeypatch.setenv("TILECRAFT_VERBOSE", "maybe")
    monkeypatch.setenv("TILECRAFT_CACHEDIR", "/tmp/x")
    monkeypatch.setenv("TILECRAFT_ZZZQQQ", "1")
    found = settings.problems()
    assert "TILECRAFT_VERBOSE='maybe' is not a valid bool" in found["TILECRAFT_VERBOSE"]
    assert found["TILECRAFT_CACHEDIR"].endswith("is not a tilecraft setting, so it does nothing; did you mean "
                                                "TILECRAFT_CACHE_DIR?")  # fmt: skip
    assert "declared: TILECRAFT_CACHE_DIR" in found["TILECRAFT_ZZZQQQ"]
    assert "TILECRAFT_CACHE_DIR" not in found


def test_describe_marks_values_a_caller_found_invalid(monkeypatch):
    monkeypatch.setenv("TILECRAFT_TARGET", "nonsense -x")
    table = settings.describe({"TILECRAFT_TARGET": "not a target"})
    row = next(line for line in table.splitlines() if line.startswith("TILECRAFT_TARGET"))
    assert "invalid: 'nonsense -x'" in row


def test_lowering_with_dump_ir_naming_a_file_fails_clearly(tmp_path):
    import tilecraft
    import tilecraft.language as T

    @T.prim_func
    def copy(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.Parallel(64):
                Y[i] = X[i]

    existing = tmp_path / "dump"
    existing.write_text("")
    with (
        settings.override(TILECRAFT_DUMP_IR=existing),
        pytest.raises(SettingError, match="TILECRAFT_DUMP_IR"),
    ):
        tilecraft.lower(copy, target="cpu")


def test_a_path_under_an_unknown_users_home_is_a_setting_error(monkeypatch):
    monkeypatch.setenv("TILECRAFT_CACHE_DIR", "~no-such-user-xyz/cache")
    with pytest.raises(SettingError, match="TILECRAFT_CACHE_DIR=.*~no-such-user-xyz names no home directory"):
        settings.get("TILECRAFT_CACHE_DIR")


def test_a_check_that_cannot_look_at_the_path_is_a_setting_error(monkeypatch):
    def unreadable(path):
        raise PermissionError(13, "Permission denied", str(path))

    registry = settings.SettingsRegistry()
    registry.declare(Setting("TILECRAFT_TEST_DIR", Path, None, "a directory", check=unreadable))
    monkeypatch.setenv("TILECRAFT_TEST_DIR", "/secret/dir")
    with pytest.raises(
        SettingError, match="TILECRAFT_TEST_DIR='/secret/dir' cannot be used: .*Permission denied"
    ):
        registry.get("TILECRAFT_TEST_DIR")
    assert "TILECRAFT_TEST_DIR" in registry.problems({})


def test_attribute_style_read_of_a_bad_value_is_a_setting_error(monkeypatch):
    monkeypatch.setenv("TILECRAFT_VERBOSE", "maybe")
    with pytest.raises(SettingError, match="TILECRAFT_VERBOSE='maybe'"):
        settings.verbose  # noqa: B018
