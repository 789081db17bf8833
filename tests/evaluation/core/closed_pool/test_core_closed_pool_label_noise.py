"""A closed pool's labels corrected for annotator error (:mod:`.closed_pool.label_noise`)."""

from __future__ import annotations

import numpy as np

from evaluation.core.closed_pool.cells import rank_cells
from evaluation.core.closed_pool.label_noise import pool_labels
from evaluation.core.state import TaskState


def test_a_false_yes_in_an_unvoted_cell_keeps_the_small_share_of_a_positive_its_cell_allows():
    # One run predicting the top 40 of 20,000 items. Verified: its 40 predictions (half
    # positive, answered clearly by two annotators) and every 200th unvoted item (pi = 0.005),
    # answered "no", one in 20 after a false "yes" its looks overturned, except one with 3 "yes"
    # and 2 "no": a negative's false "yes" that survived its looks. Gold items (half positive,
    # one answer in 20 wrong) fix the annotators' error rates near 5%. The model's class prior is
    # near one half (the voted items); the unvoted cells' rank prior is about 1e-4. Centred on
    # the class prior that item was 0.16 of a positive, which its cell of 8,192 items at weight
    # 200 turns into phantom positives (dblp-acm at 250 labels: recall biased by -0.02 to
    # -0.04); centred on the rank prior it is 0.001, and five "yes" still make a positive.
    n = 20000
    scores = 1.0 - np.arange(n) / n
    predictions = np.arange(n) < 40
    cells = rank_cells(scores[None, :], predictions[None, :])
    answers = TaskState(n)
    gold = np.arange(19900, 20000)
    gold_truth = np.arange(gold.size) % 2 == 0
    answers.set_gold(gold, gold_truth)
    items, anns, says = [], [], []

    def judge(x, pattern, first=None):
        for a, said in enumerate(pattern):
            items.append(x)
            anns.append((a + (x if first is None else first)) % 5)
            says.append(bool(said))

    for g, x in enumerate(gold):
        judge(
            x, [bool(gold_truth[g]) != ((g // 2 + 3 * ((a + x) % 5)) % 20 == 0) for a in range(5)]
        )
    unvoted = np.arange(40, 19840, 200)
    doubtful, sure = int(unvoted[-20]), int(unvoted[2])
    for x in range(40):
        judge(x, [x % 2 == 0] * 2)
    for k, x in enumerate(unvoted):
        if x == doubtful:
            judge(x, [True, True, False, True, False])
        elif x == sure:
            judge(x, [True] * 5)
        else:  # one in 20 a false "yes" that its looks overturned
            judge(x, [True, False, False] if k % 20 == 7 else [False], first=k // 20)
    answers.add_judgments(items, anns, says)
    verified = np.zeros(n, dtype=bool)
    verified[:40] = True
    verified[unvoted] = True
    inclusion = np.where(predictions, 1.0, 0.005)
    weight = np.where(verified, 1.0 / inclusion, 0.0)
    labels = pool_labels(answers, verified, cells, weight, inclusion)
    assert labels is not None
    run = labels.for_run(predictions).value
    cell = labels.cell_values()
    assert not cells.voted[cells.of_item[doubtful]]
    assert run[doubtful] < 0.01 and cell[doubtful] < 0.01
    assert run[sure] > 0.9 and cell[sure] > 0.9
    # The voted cells keep the model's centre: their clear answers are what they say.
    np.testing.assert_allclose(run[:40], np.arange(40) % 2 == 0, atol=0.01)
