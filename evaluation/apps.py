# Django app wrapper for `evaluation`. Only this module, models and migrations may touch Django;
# `evaluation/__init__.py` and `evaluation/core/` must import without Django configured.
from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"
