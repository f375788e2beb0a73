"""Optional modules (torch, CuPy) are never used half-imported while another thread imports them."""

import sys
import threading
import types

from tilecraft._modules import imported, optional

# The module's import is held at a gate the test opens, so "half-built" lasts as long as the test needs
# (a sleep would end early on a loaded machine and let the import finish before the check).
SLOW_MODULE = """
import tc_gate
tc_gate.started.set()
tc_gate.release.wait(60)
ready = True
"""


def test_a_module_another_thread_is_importing_is_waited_for(tmp_path, monkeypatch):
    (tmp_path / "tc_slow_module.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tc_slow_module", raising=False)
    gate = types.SimpleNamespace(started=threading.Event(), release=threading.Event())
    monkeypatch.setitem(sys.modules, "tc_gate", gate)
    importer = threading.Thread(target=__import__, args=("tc_slow_module",))
    importer.start()
    try:
        assert gate.started.wait(60), "the importing thread never began the module"
        assert imported("tc_slow_module") is None  # in sys.modules, but its body has not finished
        threading.Timer(0.05, gate.release.set).start()  # finish while optional() waits for it
        module = optional("tc_slow_module")
    finally:
        gate.release.set()
        importer.join()
    assert module.ready  # a half-built module would have no `ready` yet


def test_absent_modules_are_none():
    assert optional("tc_no_such_module_anywhere") is None
    assert imported("tc_no_such_module_anywhere") is None
