"""The test doubles as an omoide plugin named ``testing``: ``use: fake`` in a config.

The doubles themselves live in :mod:`omoide.testing.doubles` (the contract kit, which
plugin authors use too); this distribution only registers them, so that a production
install, which never installs it, cannot pick a fake by mistake. The test set-up
(``./dev.sh test``) and omoide-bench install it.
"""
