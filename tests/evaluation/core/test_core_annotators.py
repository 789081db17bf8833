"""The annotator model: error rates recovered, spammers weightless, gold anchors, honest spread."""

import numpy as np
import pytest

from evaluation.core.annotator_fit import inverse_information
from evaluation.core.annotators import AnnotatorPrior, fit_label_model


def panel_judgments(seed, *, rates, sensitivity, specificity, n_items=900, second=0.3, gold=60):
    """Items in classes of the given rates, judged once (``second``: share judged twice by
    another annotator), plus ``gold`` gold items (half correct) judged twice each."""
    rng = np.random.default_rng(seed)
    n_ann = len(sensitivity)
    cls = rng.integers(0, len(rates), n_items)
    truth = rng.random(n_items) < np.asarray(rates)[cls]
    items, anns, says = [], [], []

    def judge(x, f, k):
        for a in rng.choice(n_ann, k, replace=False):
            items.append(x)
            anns.append(a)
            says.append(rng.random() < (sensitivity[a] if f else 1 - specificity[a]))

    for x in range(n_items):
        judge(x, truth[x], 2 if rng.random() < second else 1)
    gold_items = np.arange(n_items, n_items + gold)
    gold_truth = np.arange(gold) % 2 == 0
    for x, f in zip(gold_items, gold_truth, strict=True):
        judge(x, f, 2)
    item_class = np.concatenate([cls, np.full(gold, -1)])
    return (
        np.array(items),
        np.array(anns),
        np.array(says),
        item_class,
        gold_items,
        gold_truth,
        truth,
    )


def test_error_rates_are_recovered_within_their_intervals():
    se = [0.98, 0.95, 0.9, 0.95, 0.85]
    sp = [0.97, 0.95, 0.92, 0.8, 0.95]
    items, anns, says, cls, gold, gold_truth, _ = panel_judgments(
        1, rates=[0.99, 0.9, 0.5, 0.1, 0.01], sensitivity=se, specificity=sp, n_items=3000
    )
    model = fit_label_model(
        items, anns, says, item_class=cls, exact_items=gold, exact_labels=gold_truth
    )
    assert model.converged
    for s, true_se, true_sp in zip(model.summaries(level=0.99), se, sp, strict=True):
        assert s.sensitivity_low <= true_se <= s.sensitivity_high
        assert s.specificity_low <= true_sp <= s.specificity_high
        assert abs(s.sensitivity - true_se) < 0.04 and abs(s.specificity - true_sp) < 0.06


def test_a_spammer_carries_no_weight_whatever_their_volume():
    se = [0.97, 0.95, 0.5]
    items, anns, says, cls, gold, gold_truth, _ = panel_judgments(
        2, rates=[0.95, 0.5, 0.05], sensitivity=se, specificity=se, n_items=2500, second=0.5
    )
    model = fit_label_model(
        items, anns, says, item_class=cls, exact_items=gold, exact_labels=gold_truth
    )
    spammer = model.summaries()[2]
    assert spammer.judgments > 1000  # the most prolific annotator is the one with no signal
    assert abs(spammer.weight) < 0.25
    assert min(s.weight for s in model.summaries()[:2]) > 2.5


def test_gold_answers_alone_fit_the_annotators():
    # The first answers of a task can all be gold (20% of the judgments of the annotator-error
    # integration test): with no uncertain judgment the M-step's sums were integer arrays, and
    # adding the gold counts in place raised (a planning job crashed and its run stalled).
    gold = np.arange(6)
    truth = np.array([True, True, True, False, False, False])
    says = np.array([True, True, False, False, False, True])
    model = fit_label_model(
        gold,
        np.zeros(6, np.int64),
        says,
        item_class=np.zeros(6, np.int64),
        exact_items=gold,
        exact_labels=truth,
    )
    assert model.sensitivity[0] > 0.5 and model.specificity[0] > 0.5


def test_gold_and_exact_labels_are_never_doubted():
    items, anns, says, cls, gold, gold_truth, _ = panel_judgments(
        3, rates=[0.9, 0.1], sensitivity=[0.9, 0.9], specificity=[0.9, 0.9]
    )
    model = fit_label_model(
        items, anns, says, item_class=cls, exact_items=gold, exact_labels=gold_truth
    )
    assert not np.isin(gold, model.items).any()
    assert model.gold_per_annotator.sum() == 2 * gold.size
    assert np.all((model.mean > 0) & (model.mean < 1))


def test_no_label_switching_when_most_items_are_incorrect():
    # 90% of the items are incorrect: a model free to swap "correct" and "incorrect" would call
    # the annotators wrong most of the time. The priors and gold keep it the right way round.
    items, anns, says, cls, gold, gold_truth, truth = panel_judgments(
        4, rates=[0.1], sensitivity=[0.9, 0.9, 0.9], specificity=[0.9, 0.9, 0.9], gold=10
    )
    model = fit_label_model(
        items, anns, says, item_class=cls, exact_items=gold, exact_labels=gold_truth
    )
    # Few correct items tell little of the sensitivity, but nothing is upside down.
    assert (model.sensitivity > 0.6).all() and (model.specificity > 0.8).all()
    assert abs(model.mean.mean() - truth.mean()) < 0.05


def test_specificity_is_not_pushed_up_by_many_nearly_pure_classes():
    # Forty classes with no correct item and answers judged once: a free rate per class could
    # explain the false "correct" answers as a few correct items, and the bound at 0 pushes the
    # specificity up. The fitted (U-shaped) prior over classes keeps it where it is.
    rates = [0.0] * 30 + [1.0] * 10
    estimates = []
    for seed in range(12):
        items, anns, says, cls, gold, gold_truth, _ = panel_judgments(
            100 + seed,
            rates=rates,
            sensitivity=[0.95] * 5,
            specificity=[0.95] * 5,
            n_items=2400,
            second=0.05,
            gold=40,
        )
        model = fit_label_model(
            items, anns, says, item_class=cls, exact_items=gold, exact_labels=gold_truth
        )
        estimates.append(model.specificity.mean())
    assert abs(np.mean(estimates) - 0.95) < 0.006, np.mean(estimates)


def test_a_prior_fitted_to_a_few_classes_stays_near_flat_and_keeps_the_specificity():
    # Four classes (a small task). With a hyperprior of precision 0.25 the Beta prior fitted to
    # four rates came out U-shaped by chance (min(a, b) 0.12, median 0.27 over these 40 data
    # sets); its mode at 0 trapped the class of rate 0.24 (3 of 40) and the good annotator's
    # specificity, 0.97, was estimated at 0.949 on average (0.862 at worst). Now: min(a, b)
    # 0.34, 2 of 40 trapped, 0.957 (0.895 at worst).
    rates = [1.0, 0.06, 0.6, 0.24]
    shapes, specificity = [], []
    for seed in range(40):
        items, anns, says, cls, gold, gold_truth, _ = panel_judgments(
            300 + seed,
            rates=rates,
            sensitivity=[0.97, 0.9, 0.6],
            specificity=[0.97, 0.9, 0.6],
            n_items=260,
            second=0.2,
            gold=40,
        )
        model = fit_label_model(
            items, anns, says, item_class=cls, exact_items=gold, exact_labels=gold_truth
        )
        shapes.append(min(model.rate_prior))
        specificity.append(model.specificity[0])
    assert min(shapes) > 0.3, min(shapes)
    assert np.mean(specificity) > 0.955, np.mean(specificity)


@pytest.mark.slow
def test_parameter_covariance_matches_the_spread_of_the_estimates():
    # The inverse observed information (Louis) against the spread over repeated data sets.
    fitted, predicted = [], []
    for seed in range(150):
        items, anns, says, cls, gold, gold_truth, _ = panel_judgments(
            200 + seed,
            rates=[0.97, 0.03],
            sensitivity=[0.95, 0.9],
            specificity=[0.95, 0.9],
            n_items=400,
            second=0.2,
            gold=20,
        )
        model = fit_label_model(
            items, anns, says, item_class=cls, exact_items=gold, exact_labels=gold_truth
        )
        logit = np.log(model.sensitivity / (1 - model.sensitivity))
        fitted.append(logit)
        predicted.append(np.sqrt(np.diag(model.covariance)[:2]))
    spread = np.std(fitted, axis=0, ddof=1)
    ratio = np.mean(predicted, axis=0) / spread
    assert ((ratio > 0.75) & (ratio < 1.4)).all(), ratio


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="same length"):
        fit_label_model([1, 2], [0], [True, False], item_class=np.zeros(3, int))
    with pytest.raises(ValueError, match="prior class"):
        fit_label_model([5], [0], [True], item_class=np.zeros(3, int))
    with pytest.raises(ValueError, match="two positive numbers"):
        AnnotatorPrior(sensitivity=(0.0, 1.0))


def test_the_block_inverse_of_the_information_is_the_inverse():
    # Class rates have a diagonal block (an item belongs to one class): the inverse goes through
    # the annotators' Schur complement, and must equal the plain inverse.
    rng = np.random.default_rng(3)
    k, c = 6, 40
    a = rng.normal(size=(k, k))
    a = a @ a.T + 50 * np.eye(k)
    b = rng.normal(size=(k, c))
    information = np.block([[a, b], [b.T, np.diag(rng.uniform(5, 20, c))]])
    inverse = inverse_information(information, np.full(k + c, 10.0), k)
    assert np.allclose(inverse, np.linalg.inv(information), rtol=1e-10, atol=1e-12)


def test_the_latent_covariance_is_what_unknown_labels_add():
    # 60 items, 6 correct, judged by two annotators each. When every pair agrees the labels are
    # all but certain and add next to nothing to the error rates' variance; when one answer in
    # seven is wrong, the labels of the disagreements are unknown and add much of it.
    truth = np.zeros(60, bool)
    truth[::10] = True
    items = np.arange(60)
    wrong = np.random.default_rng(0).random(60) < 0.15

    def fitted(second):
        return fit_label_model(
            np.r_[items, items],
            np.r_[items % 2, 1 - items % 2],
            np.r_[truth, second],
            item_class=np.zeros(60, np.int64),
        )

    for model, (low, high) in ((fitted(truth), (0.0, 0.05)), (fitted(truth ^ wrong), (0.2, 0.9))):
        latent = model.latent_covariance()
        total = model.covariance[:4, :4]
        assert latent.shape == (4, 4)
        assert np.all(np.linalg.eigvalsh(latent) >= -1e-12)  # a covariance,
        assert np.all(np.linalg.eigvalsh(total - latent) >= -1e-9)  # within the total
        assert low <= np.trace(latent) / np.trace(total) <= high
