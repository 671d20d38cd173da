"""pytest under ctest: a file whose every test skipped exits 77, which ctest lists as skipped."""


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    passed = len(reporter.stats.get("passed", []))
    skipped = len(reporter.stats.get("skipped", []))
    if skipped and not passed:
        session.exitstatus = 77
