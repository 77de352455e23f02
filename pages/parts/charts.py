"""The dashboard's charts, part one: what every chart shares (tooltips, unchecked specs, wrapped labels, the
direction colours) and Compare's charts. Each builder takes the frame its page's view function returned and gives
a chart; the pages only place them. Numbers are drawn with their unit in the axis title and tooltips. The browsing
pages' charts (Trends, Matrix, Memory, Correctness) are in pages.parts.browse_charts."""

from __future__ import annotations

import altair as alt
import pandas as pd
from altair.utils.core import infer_vegalite_type_for_pandas

from db.views.release.compare_chart import DIRECTIONS, ratio_reach


def tooltips(data: pd.DataFrame, *fields: str) -> list[alt.Tooltip]:
    """Tooltips for plain fields, typed as Altair would infer them from `data`, as channel objects: given bare
    names, Altair rebuilds its schema lookup for each (~8 ms a field, ~0.2 s for the Compare page's charts)."""
    return [alt.Tooltip(name, type=infer_vegalite_type_for_pandas(data[name])) for name in fields]


class UncheckedLayer(alt.LayerChart):
    """A layer chart whose spec is not checked against the Vega-Lite JSON schema when Streamlit converts it:
    Altair's check costs ~150 ms a chart here, spent before the chart is sent. The specs are fixed by this
    module; tests/test_charts.py checks each against the schema (the unchecked spec is the same)."""

    def to_dict(self, *args, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(*args, validate=validate, **kwargs)


class UncheckedFacet(alt.FacetChart):
    """alt.FacetChart, its spec unchecked when Streamlit converts it (see UncheckedLayer)."""

    def to_dict(self, *args, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(*args, validate=validate, **kwargs)


class UncheckedChart(alt.Chart):
    """alt.Chart, its spec unchecked when Streamlit converts it (see UncheckedLayer)."""

    def to_dict(self, *args, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(*args, validate=validate, **kwargs)


# --- Compare -----------------------------------------------------------------------------------------------------

# better / worse / not significant / unchanged (within a single figure's rule): one colour each, the same on every
# view (the Matrix's red-blue too)
DIRECTION_COLORS = alt.Scale(domain=list(DIRECTIONS), range=["#2166ac", "#b2182b", "#bdbdbd", "#e0e0e0"])
# Case labels are wrapped at their " · " parts into lines of at most LINE_CHARS characters and never drawn wider
# than LABEL_PX: a chart stretched to the page keeps the rest for its plot (820 px wide at a 1280-px window, the
# sidebar open; unbounded labels once left the plot 2 px, or pushed every bar out of it)
LINE_CHARS, LABEL_PX, LINE_PX, LABEL_FONT = 60, 330, 13, 11
FIT_WIDTH = {"type": "fit-x", "contains": "padding"}  # the page's width; the height grows with the rows


def wrap(text: str, width: int = LINE_CHARS) -> str:
    """`text` as lines ("\n") of at most `width` characters, broken after a " · " part where one fits, else at
    a space (a single word longer than `width` keeps its own line: the axis's LABEL_PX cuts it, with an "…")."""
    lines, line = [], ""
    for part in str(text).split(" · "):
        words = part.split(" ") if len(part) > width else [part]
        for i, word in enumerate(words):
            glue = " · " if line and i == 0 else " "  # a part's first word keeps the " · " before it
            if line and len(line) + len(glue) + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line}{glue}{word}" if line else word
    return "\n".join(lines + [line])


def wrapped_axis(**kwargs) -> alt.Axis:
    """A band axis whose labels are the wrapped values (one Vega text line per "\n"), LABEL_PX wide at most."""
    return alt.Axis(
        labelExpr="split(datum.value, '\\n')",
        labelLimit=LABEL_PX,
        labelFontSize=LABEL_FONT,
        labelLineHeight=LINE_PX,
        **kwargs,
    )


def axis_unit(name: str, unit: str) -> str:
    """An axis title with its unit: "sample (µs)"; a dimensionless figure (unit "1") says so."""
    return f"{name} ({'dimensionless' if unit == '1' else unit})"


def ratio_chart(data: pd.DataFrame, baseline: str) -> alt.LayerChart:
    """Diverging log-ratio chart (db.views.release.compare_chart.chart_rows): per case a bar from 1× to the oriented
    ratio (right: candidate better), its 95 % CI as a whisker, coloured better / worse / not significant;
    a regression is marked with a ring. The axis is ratio_reach's (at most 1/3×–3×): a bar beyond it ends at the
    edge with its true value written inside it ("beyond: 8.13×"); every tooltip gives the true figures. Labels are
    whole (no truncation)."""
    lines = data.label.map(wrap)
    order = lines.tolist()
    y = alt.Y("lines:N", title=None, sort=order, axis=wrapped_axis())
    reach = ratio_reach(data)
    x_scale = alt.Scale(type="log", domain=[1.0 / reach, reach])  # symmetric around 1×: a win and a loss look alike
    title = [f"× better than baseline {baseline}", "log axis; right of 1× = candidate better"]  # 2 lines: fits
    tips = tooltips(data, "label", "direction", "regression", "unit", "derived", "rank") + [
        alt.Tooltip("oriented_ratio:Q", title="× better", format=".3f"),
        alt.Tooltip("ci_low:Q", title="95 % CI low (×)", format=".3f"),
        alt.Tooltip("ci_high:Q", title="95 % CI high (×)", format=".3f"),
        alt.Tooltip("baseline_median:Q", title="baseline median (unit)"),
        alt.Tooltip("candidate_median:Q", title="candidate median (unit)"),
        alt.Tooltip("change:N"),
        alt.Tooltip("p_value:Q"),
        alt.Tooltip("beyond_text:N", title="drawn to the axis' edge"),
    ]
    frame = data.assign(one=1.0, lines=lines)
    base = alt.Chart(frame).encode(y=y, tooltip=tips)
    bars = base.mark_bar(height=14).encode(
        # the axis on top, beside the legend: a chart taller than its box scrolls, and its scale stays in view
        x=alt.X("drawn:Q", scale=x_scale, title=title, axis=alt.Axis(orient="top")),
        x2=alt.X2("one:Q"),
        color=alt.Color("direction:N", scale=DIRECTION_COLORS, title=None, legend=alt.Legend(orient="top")),
    )
    whiskers = (
        base.transform_filter("isValid(datum.ci_low) && datum.ci_low > 0")
        .mark_rule(color="black", strokeWidth=1.5)
        .encode(x=alt.X("drawn_ci_low:Q", scale=x_scale), x2=alt.X2("drawn_ci_high:Q"))
    )
    rings = (
        base.transform_filter("datum.regression")
        .mark_point(shape="circle", size=90, color="#b2182b", strokeWidth=2, filled=False)
        .encode(x=alt.X("drawn:Q", scale=x_scale))
    )
    # a bar past the edge: its true value inside its end (white on the bar), right-aligned at a right edge
    beyond = base.transform_filter("datum.beyond")
    past = [
        beyond.transform_filter(f"datum.drawn {side} 1")
        .mark_text(align=align, dx=dx, fontSize=10, fontWeight="bold", color="white")
        .encode(x=alt.X("drawn:Q", scale=x_scale), text=alt.Text("beyond_text:N"))
        for side, align, dx in ((">", "right", -4), ("<", "left", 4))
    ]
    rule = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(strokeDash=[4, 4]).encode(x=alt.X("x:Q", scale=x_scale))
    return UncheckedLayer(
        layer=[bars, whiskers, rings, *past, rule], height=alt.Step(ratio_step(lines)), autosize=FIT_WIDTH
    )


def ratio_step(lines: pd.Series) -> int:
    """The px per bar of the ratio chart: its tallest wrapped label fits."""
    return LINE_PX * int(lines.str.count("\n").max() + 1 if len(lines) else 1) + 8


def ratio_chart_px(data: pd.DataFrame) -> int:
    """About how tall ratio_chart draws `data` (px): its bars, and ~110 px of legend and axis."""
    return ratio_step(data.label.map(wrap)) * len(data) + 110


def samples_chart(samples: pd.DataFrame, unit: str) -> alt.LayerChart:
    """One case's raw samples of both sides: ticks over a box plot, in `unit`."""
    points = (
        alt.Chart(samples)
        .mark_tick(thickness=2, size=24)
        .encode(
            x=alt.X("sample:Q", title=axis_unit("sample", unit), scale=alt.Scale(zero=False)),
            y=alt.Y("side:N", title=None),
            color=alt.Color("side:N"),
            tooltip=[
                alt.Tooltip("side:N"),
                alt.Tooltip("sample:Q", title=axis_unit("sample", unit)),
                alt.Tooltip("unit:N"),
            ],
        )
    )
    box = (
        alt.Chart(samples)
        .mark_boxplot(opacity=0.3, size=30)
        .encode(  # the same titles: Vega-Lite would join two
            x=alt.X("sample:Q", title=axis_unit("sample", unit), scale=alt.Scale(zero=False)),
            y=alt.Y("side:N", title=None),
            color=alt.Color("side:N"),
        )
    )
    return UncheckedLayer(layer=[box, points])
