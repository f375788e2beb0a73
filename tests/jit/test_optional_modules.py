"""Optional modules (torch, CuPy) are never used half-imported while another thread imports them."""

import sys
import threading
import time

from tilecraft._modules import imported, optional

SLOW_MODULE = """
import time
time.sleep(0.5)
ready = True
"""


def test_a_module_another_thread_is_importing_is_waited_for(tmp_path, monkeypatch):
    (tmp_path / "tc_slow_module.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tc_slow_module", raising=False)
    importer = threading.Thread(target=__import__, args=("tc_slow_module",))
    importer.start()
    while "tc_slow_module" not in sys.modules:  # the other thread has begun: the module is half-built
        time.sleep(0.001)
    assert imported("tc_slow_module") is None
    module = optional("tc_slow_module")
    importer.join()
    assert module.ready  # a half-built module would have no `ready` yet


def test_absent_modules_are_none():
    assert optional("tc_no_such_module_anywhere") is None
    assert imported("tc_no_such_module_anywhere") is None
