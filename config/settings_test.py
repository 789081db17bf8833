"""Settings for the test suite (pytest-django's ``DJANGO_SETTINGS_MODULE``): the real settings,
from the environment as everywhere else, plus the overrides every test wants. A test that needs
another value sets it with pytest-django's ``settings`` fixture."""

from config.settings import *  # noqa: F403

# The default hasher (PBKDF2) takes most of a second per password on a busy machine, and the
# tests create hundreds of users with passwords.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# WhiteNoise indexes every static file each time a middleware chain is built, which Django's test
# client does for every request (40 ms, most of a page test). With autorefresh it looks a file up
# when it is asked for instead (still through the finders, with the same headers).
WHITENOISE_AUTOREFRESH = True
