"""Settings for the test suite (pytest-django's ``DJANGO_SETTINGS_MODULE``): the real settings,
from the environment as everywhere else, plus the overrides every test wants. A test that needs
another value sets it with pytest-django's ``settings`` fixture."""

import os

# The settings refuse to load without a key (config.settings.secret_key_from_env): the tests
# have their own, public, and hand it to the processes they start (workers, a second web
# process) through the environment. Django's `check --deploy` flags the prefix.
TEST_SECRET_KEY = "django-insecure-tests-only-do-not-use-in-production"
os.environ.setdefault("DJANGO_SECRET_KEY", TEST_SECRET_KEY)

from config.settings import *  # noqa: E402, F403

# The default hasher (PBKDF2) takes most of a second per password on a busy machine, and the
# tests create hundreds of users with passwords.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# WhiteNoise indexes every static file each time a middleware chain is built, which Django's test
# client does for every request (40 ms, most of a page test). With autorefresh it looks a file up
# when it is asked for instead (still through the finders, with the same headers).
WHITENOISE_AUTOREFRESH = True

# Mail goes to files (one per message) under a directory of this process. Django's test set-up
# swaps in its in-memory backend (``mailoutbox``); a browser test, whose server runs beside the
# test, puts this one back and reads the verification link from the file.
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = VAR_DIR / "test-mail" / str(os.getpid())  # noqa: F405

# Received files on the filesystem (MEDIA_ROOT, a temporary directory of the session) whatever
# S3_BUCKET says: a test that wants an object store starts its own (tests/support/object_store.py).
STORAGES = {**STORAGES, "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"}}  # noqa: F405
