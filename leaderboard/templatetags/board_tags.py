"""The board's table body, written in Python: 200 runs x 3 metrics through template includes
cost ~100 ms per page, this costs a few. Every value is escaped here (``html.escape`` on text,
numbers are formatted), and the result is marked safe only as a whole."""

from __future__ import annotations

from html import escape

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_RUN_URL_MARK = 987654321


def _attr(value) -> str:
    return escape(str(value), quote=True)


def metric_cell_html(cell, confidence: str) -> str:
    """``<td class="metric">`` with the value, ``+up / -down``, and the interval in a title; a
    value not to be read as settled (recall on too small a reference sample) is flagged with
    why, in the cell (as ``_metric_cell.html`` does)."""
    td, note = '<td class="metric"', ""
    if cell.note:
        td = '<td class="metric flagged" data-flag="reference_too_small"'
        note = f'<div class="cell-note">{escape(cell.note)}</div>'
    if cell.value is None:
        return f'{td}><span class="value">—</span>{note}</td>'
    title, body = "", f'<span class="value">{cell.value_text}</span>'
    if cell.has_interval:
        rests = ""
        if cell.labels_used is not None:
            n = cell.labels_used
            rests = f"; rests on {n} label{'' if n == 1 else 's'}"
        title = f' title="{cell.interval_text} at {_attr(confidence)}{rests}"'
        body += (
            f' <span class="pm"><span class="plus">{cell.plus_text}</span> / '
            f'<span class="minus">{cell.minus_text}</span></span>'
            f'<div class="interval">{cell.interval_text}</div>'
        )
    return f"{td}{title}>{body}{note}</td>"


def _rank_html(rank) -> str:
    if rank is None:
        return '<span class="muted" title="rank not computed">—</span>'
    return f'<span title="{_attr(rank.title)}">{escape(rank.text)}</span>'


def _rank_cell_html(row) -> str:
    if row.baseline:
        return (
            '<span class="badge baseline-badge" title="A reference point set by the organizers: '
            'listed without a rank">baseline</span>'
        )
    return _rank_html(row.rank)


@register.simple_tag
def board_rows(board) -> SafeString:
    """The ``<tr>`` of every run of ``board`` (a :class:`leaderboard.presenters.Board`)."""
    return mark_safe(_rows_html(board))  # every piece is escaped or numeric (see _rows_html)


def _rows_html(board) -> str:
    run_url = reverse("run_detail", args=[_RUN_URL_MARK]).replace(str(_RUN_URL_MARK), "{}")
    confidence = board.confidence_percent
    out = []
    for row in board.rows:
        name = escape(row.name)
        if row.run_id is not None:
            name = f'<a href="{run_url.format(int(row.run_id))}">{name}</a>'
        if row.link:
            name += (
                f' <a class="ext" href="{_attr(row.link)}" rel="nofollow noopener '
                f'noreferrer" title="The team\'s link">↗</a>'
            )
        state = f'<span class="state state-{_attr(row.state)}">{escape(row.state_label)}</span>'
        if row.state_text:
            state += f'<div class="state-text small">{escape(row.state_text)}</div>'
        if row.provisional:
            state += (
                ' <span class="badge provisional-badge" title="Still awaiting answers: '
                "the interval may be wider than the task's target\">provisional</span>"
            )
            if row.n_requested and row.state != "awaiting_labels":  # its words say so already
                state += (
                    f'<div class="muted small">{int(row.n_verified or 0)} of '
                    f"{int(row.n_requested)} verified</div>"
                )
        if row.after_deadline:
            name += (
                ' <span class="badge late-badge" title="Submitted after the official '
                'deadline">after the deadline</span>'
            )
        labels = "—" if row.labels_used is None else str(int(row.labels_used))
        out.append(
            f'<tr class="run-row{" provisional" if row.provisional else ""}'
            f'{" late" if row.after_deadline else ""}{" baseline" if row.baseline else ""}" '
            f'data-run="{"" if row.run_id is None else int(row.run_id)}">'
            f'<td class="num rank">{_rank_cell_html(row)}</td>'
            f'<td class="run-name">{name}</td><td>{escape(row.team)}</td>'
            + "".join(metric_cell_html(c, confidence) for c in row.cells)
            + f'<td class="num">{labels}</td><td>{state}</td></tr>'
        )
    return "\n".join(out)
