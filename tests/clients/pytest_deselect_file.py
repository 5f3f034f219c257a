"""pytest plugin (-p pytest_deselect_file): leaves out the tests named in the file
$PYTEST_DESELECT_FILE, one id a line ('dir/test_x.py::test_f[params]' relative to the
rootdir), or a whole test function or file. pytest_compare.py writes it: the
documented deselections and, when a run is resumed after a crash, the tests already
done and the one that crashed (too many for --deselect arguments)."""

import os


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("PYTEST_DESELECT_FILE")
    if not path or not os.path.exists(path):
        return
    with open(path) as f:
        ids = {line.rstrip("\n") for line in f if line.strip()}
    keep, drop = [], []
    for item in items:
        tid = item.nodeid
        named = tid in ids or tid.split("[")[0] in ids or tid.split("::")[0] in ids
        (drop if named else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
