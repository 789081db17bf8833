"""The web server's access log leaves out the secret keys some links carry in their path
(issue 29: invitation keys travel in URL paths, so they reached the access log)."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

import pytest
from gunicorn.config import Config

from config.web_worker import KeylessAccessLogger, without_keys

KEYS = {
    "/invitations/tINVkey-123_abc/": "/invitations/[key]/",
    "/teams/join/TEAMkey-456/": "/teams/join/[key]/",
    "/accounts/confirm-email/MQ:1vX:abc-def/": "/accounts/confirm-email/[key]/",
    "/accounts/password/reset/key/1-cb3-8f2e9/": "/accounts/password/reset/key/[key]/",
}


@pytest.mark.parametrize(("path", "logged"), KEYS.items())
def test_keys_in_link_paths_are_left_out(path, logged):
    assert without_keys(f"GET {path}?next=/x HTTP/1.1") == f"GET {logged}?next=/x HTTP/1.1"
    assert without_keys(f"http://board.example.org{path}") == f"http://board.example.org{logged}"


def test_other_paths_are_logged_as_they_are():
    for path in (
        "/tasks/main/",
        "/tasks/main/organize/invitations/12/revoke/",
        "/accounts/password/reset/key/done/",
        "/api/teams/join/",
        "/teams/7/",
    ):
        assert without_keys(f"GET {path} HTTP/1.1") == f"GET {path} HTTP/1.1"


def test_the_access_log_has_no_key_in_any_field(tmp_path):
    log_file = tmp_path / "access.log"
    cfg = Config()
    cfg.set("accesslog", str(log_file))
    logger = KeylessAccessLogger(cfg)
    environ = {
        "REQUEST_METHOD": "POST",
        "RAW_URI": "/invitations/SECRETKEY1/",
        "PATH_INFO": "/invitations/SECRETKEY1/",
        "QUERY_STRING": "",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "203.0.113.9",
        "HTTP_REFERER": "http://board.example.org/teams/join/SECRETKEY2/",
        "HTTP_USER_AGENT": "probe",
    }
    response = SimpleNamespace(status="302 Found", sent=0, headers=[("Location", "/tasks/main/")])
    request = SimpleNamespace(headers=[("REFERER", environ["HTTP_REFERER"])])
    logger.access(response, request, environ, datetime.timedelta(milliseconds=12))
    for handler in logger.access_log.handlers:
        handler.flush()
    line = log_file.read_text()
    assert "POST /invitations/[key]/ HTTP/1.1" in line and "/teams/join/[key]/" in line
    assert "SECRETKEY" not in line


def test_the_demo_server_logs_without_keys():
    from gunicorn.util import load_class

    from evaluation.management.commands._demo_processes import web_command

    argv = web_command("127.0.0.1", 8000)
    if "gunicorn" not in argv:
        pytest.skip("gunicorn is not installed: runserver serves the demo")
    assert load_class(argv[argv.index("--logger-class") + 1]) is KeylessAccessLogger
