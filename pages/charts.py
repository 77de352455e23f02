"""Every Altair chart of the dashboard: each builder takes the frame its page's view function returned and gives
a chart; the pages only place them. Numbers are drawn with their unit in the axis title and tooltips."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd
from altair.utils.core import infer_vegalite_type_for_pandas

from db.review.cases.wording import format_value
from db.views.compare_chart import DIRECTIONS, ratio_reach
from db.views.correctness import SLOPE_DIRECTIONS
from db.views.matrix import legend_ticks


def tooltips(data: pd.DataFrame, *fields: str) -> list[alt.Tooltip]:
    """Tooltips for plain fields, typed as Altair would infer them from `data`, as channel objects: given bare
    names, Altair rebuilds its schema lookup for each (~8 ms a field, ~0.2 s for the Compare page's charts)."""
    return [alt.Tooltip(name, type=infer_vegalite_type_for_pandas(data[name])) for name in fields]


class _Layer(alt.LayerChart):
    """A layer chart whose spec is not checked against the Vega-Lite JSON schema when Streamlit converts it:
    Altair's check costs ~150 ms a chart here, spent before the chart is sent. The specs are fixed by this
    module; tests/test_charts.py checks each against the schema (the unchecked spec is the same)."""

    def to_dict(self, *args, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(*args, validate=validate, **kwargs)


class _Facet(alt.FacetChart):
    """alt.FacetChart, its spec unchecked when Streamlit converts it (see _Layer)."""

    def to_dict(self, *args, validate: bool = False, **kwargs) -> dict:
        return super().to_dict(*args, validate=validate, **kwargs)


class _Chart(alt.Chart):
    """alt.Chart, its spec unchecked when Streamlit converts it (see _Layer)."""

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
    """Diverging log-ratio chart (db.views.compare_chart.chart_rows): per case a bar from 1× to the oriented
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
    return _Layer(layer=[bars, whiskers, rings, *past, rule], height=alt.Step(ratio_step(lines)), autosize=FIT_WIDTH)


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
    return _Layer(layer=[box, points])


# --- Trends, Matrix, Memory, Correctness -------------------------------------------------------------------------

CHIP_COLORS = alt.Scale(scheme="tableau10")  # chips told apart at a glance (the theme's blues are too alike)


def trend_chart(points: pd.DataFrame) -> alt.LayerChart:
    """Median per build per chip with its interquartile band, builds in one version order (nightlies by date),
    change points as red diamonds."""
    order = points.sort_values("build_rank").torch_version.drop_duplicates().tolist()
    x = alt.X(
        "torch_version:N", sort=order, title="build (version order)", axis=alt.Axis(labelAngle=-20, labelLimit=300)
    )
    unit = points.unit.iloc[0] if not points.empty else ""
    y = alt.Y("median:Q", title=axis_unit("median", unit), scale=alt.Scale(zero=False))
    tips = tooltips(
        points,
        "chip",
        "torch_version",
        "nightly_date",
        "median",
        "p25",
        "p75",
        "unit",
        "n",
        "runs",
        "machines",
        "change_point",
    )
    band = (
        alt.Chart(points)
        .mark_area(opacity=0.2)
        .encode(
            x=x,
            y=alt.Y("p25:Q", title=axis_unit("median", unit), scale=alt.Scale(zero=False)),
            y2=alt.Y2("p75:Q"),
            color=alt.Color("chip:N", scale=CHIP_COLORS),
        )
    )
    line = (
        alt.Chart(points)
        .mark_line(point=True)
        .encode(x=x, y=y, color=alt.Color("chip:N", scale=CHIP_COLORS), tooltip=tips)
    )
    steps = (
        alt.Chart(points[points.change_point])
        .mark_point(shape="diamond", size=180, filled=True, color="#d62728")
        .encode(x=x, y=y, tooltip=tips)
    )
    return _Layer(layer=[band, line, steps])


def annotated_trend_chart(points: pd.DataFrame, annotations: pd.DataFrame) -> alt.LayerChart:
    """trend_chart with its build annotations (db.views.trends.build_annotations): a dotted grey rule at each
    build that first appeared in the series' time range, its label (build, first run) written along the rule."""
    chart = trend_chart(points)
    order = points.sort_values("build_rank").torch_version.drop_duplicates().tolist()
    x = alt.X("torch_version:N", sort=order)
    tips = [alt.Tooltip("label:N", title="build"), alt.Tooltip("store_runs:Q", title="runs of the build (store)")]
    rules = alt.Chart(annotations).mark_rule(color="#7f7f7f", strokeDash=[2, 3]).encode(x=x, tooltip=tips)
    labels = (
        alt.Chart(annotations)
        .mark_text(angle=270, align="right", baseline="bottom", dx=-4, dy=-3, fontSize=10, color="#555555")
        .encode(x=x, y=alt.value(0), text=alt.Text("label:N"), tooltip=tips)
    )
    return _Layer(layer=[*chart.layer, rules, labels])


def matrix_chart(grid: pd.DataFrame, builds: list[str], span: float, baseline: str = "") -> alt.LayerChart:
    """Row × build heatmap of the geomean oriented ratio (× better), the number in each cell. The colour scale is
    logarithmic and symmetric around 1× (1/span … span, db.views.matrix.matrix_grid): red worse, blue better,
    white unchanged; its legend labels readable steps (0.8×, 1× = baseline, 1.25×: legend_ticks). A cell without a
    figure is grey and says why ("no data", "not run")."""
    base = alt.Chart(grid).encode(
        x=alt.X("build:N", sort=builds, title="candidate build", axis=alt.Axis(labelAngle=-20, labelLimit=300)),
        y=alt.Y("row:N", title=None, axis=alt.Axis(labelLimit=400)),
    )
    # below the heatmap, across: a two-row matrix is ~70 px high, too short for an upright gradient's labels
    legend = alt.Legend(
        values=legend_ticks(span),
        orient="bottom",
        direction="horizontal",
        gradientLength=360,
        labelOverlap="greedy",
        titleLimit=500,
        labelExpr="abs(datum.value - 1) < 1e-9 ? '1×' : format(datum.value, '.2~f') + '×'",
    )
    title = (
        f"geomean × better than baseline {baseline} (1× = the same; red slower, blue faster)"
        if baseline
        else "geomean (× better)"
    )
    cells = (
        base.transform_filter("datum.has_data")
        .mark_rect()
        .encode(
            color=alt.Color(
                "geomean:Q",
                title=title,
                scale=alt.Scale(type="log", scheme="redblue", domain=[1.0 / span, span], domainMid=1.0, clamp=True),
                legend=legend,
            ),
            tooltip=tooltips(grid, "row", "build", "label", "ci", "n_cases", "baseline"),
        )
    )
    empty = base.transform_filter("!datum.has_data").mark_rect(color="#eeeeee")
    text = base.mark_text(fontSize=12).encode(
        text=alt.Text("label:N"), color=alt.condition("datum.dark", alt.value("white"), alt.value("black"))
    )
    return _Layer(layer=[cells, empty, text], height=alt.Step(34))


FACET_PX = 150
SIDE_COLORS = alt.Scale(domain=["baseline", "candidate"], range=["#9e9e9e", "#1f77b4"])


def memory_chart(rows: pd.DataFrame, figures: list[str], baseline: str = "", candidate: str = "") -> alt.FacetChart:
    """One machine's nested peaks (driver ⊇ reserved ⊇ live), a column per figure, a bar per case and side in GiB
    with its value written beside it; a side without a figure (OOM, unavailable) gets its state written instead
    of a bar. Every bar is one figure of one case: nothing is stacked or summed; each figure has its own GiB axis. The legend above says which
    colour is which build; case names wrap (an inductor case's name ends in "inductor", never cut off)."""
    rows = rows.assign(at=rows["GiB"].fillna(0.0), lines=rows["case"].map(wrap))
    names = {"baseline": f"baseline {baseline}".strip(), "candidate": f"candidate {candidate}".strip()}
    legend = alt.Legend(
        orient="top",
        title=None,
        labelLimit=400,
        labelExpr=f"datum.value === 'baseline' ? {json.dumps(names['baseline'])} : {json.dumps(names['candidate'])}",
    )
    base = alt.Chart().encode(
        y=alt.Y("lines:N", title=None, sort=rows["lines"].drop_duplicates().tolist(), axis=wrapped_axis()),
        yOffset=alt.YOffset("side:N", sort=["baseline", "candidate"]),
        tooltip=[
            alt.Tooltip("case:N"),
            alt.Tooltip("figure:N"),
            alt.Tooltip("side:N"),
            alt.Tooltip("GiB:Q", format=".3f", title="peak (GiB)"),
            alt.Tooltip("state:N"),
            alt.Tooltip("change:N"),
        ],
    )
    bars = base.mark_bar().encode(
        x=alt.X("GiB:Q", title="peak (GiB)"), color=alt.Color("side:N", scale=SIDE_COLORS, legend=legend)
    )
    labels = base.mark_text(align="left", dx=3, fontSize=10).encode(x=alt.X("at:Q"), text=alt.Text("label:N"))
    step = max(LINE_PX * int(rows["lines"].str.count("\n").max() + 1 if len(rows) else 1) + 8, 28)
    # a fixed width per figure: three facets and the case labels (LABEL_PX at most) fit a 1280-px window. Each
    # figure's axis is fitted to its own bars: one shared axis ran to a 270 GiB driver total and squashed 0.4–8 GiB
    # live-tensor bars to slivers (the driver total stays drawn, on its own axis)
    return _Facet(
        data=rows,
        spec=alt.LayerChart(layer=[bars, labels], width=FACET_PX, height=alt.Step(step)),
        facet=alt.Facet("figure:N", sort=figures, title=None),
        columns=len(figures),
        resolve=alt.Resolve(scale=alt.ScaleResolveMap(x="independent")),
    )


SLOPE_COLORS = alt.Scale(domain=list(SLOPE_DIRECTIONS), range=DIRECTION_COLORS.range)


def value_format(unit: str) -> str:
    """An axis format for a correctness figure: dB to 0.1 dB; a plain error ratio in significant digits (1e-6
    would read 0.000001 — or 0.000000 — at a fixed precision)."""
    return ".1f" if unit == "dB" else ".3~g"


def correctness_slope_chart(slopes: pd.DataFrame, baseline: str, candidate: str) -> alt.LayerChart:
    """Per machine and case a slope from the baseline build's figure to the candidate's (in the metric's unit),
    coloured improved / worsened / within its rule like Compare's better / worse / not significant. A dashed rule, with
    its value written on it, marks each tolerance the records carry; a case without one (PSNR records often have
    none) is still drawn, only without a rule."""
    unit, fmt = slopes["unit"].iloc[0], value_format(slopes["unit"].iloc[0])
    sides = [f"baseline {baseline}", f"candidate {candidate}"]
    long = slopes.assign(label=slopes["machine_name"] + " · " + slopes["case"]).melt(
        id_vars=["label", "direction", "metric", "unit", "tolerance", "change"],
        value_vars=["baseline_median", "candidate_median"],
        var_name="side",
        value_name="value",
    )
    long["side"] = long["side"].map(dict(zip(["baseline_median", "candidate_median"], sides)))
    x = alt.X("side:N", sort=sides, title=None, axis=alt.Axis(labelAngle=0, labelLimit=400))
    y = alt.Y(
        "value:Q",
        title=axis_unit(slopes["metric"].iloc[0], unit),
        scale=alt.Scale(zero=False),
        axis=alt.Axis(format=fmt),
    )
    lines = (
        alt.Chart(long)
        .mark_line(point=True, strokeWidth=2)
        .encode(
            x=x,
            y=y,
            detail=alt.Detail("label:N"),
            color=alt.Color("direction:N", scale=SLOPE_COLORS, title=None, legend=alt.Legend(orient="top")),
            tooltip=tooltips(long, "label", "side", "metric", "direction")
            + [
                alt.Tooltip("value:Q", title=axis_unit("value", unit), format=fmt),
                alt.Tooltip("tolerance:Q", title=axis_unit("tolerance", unit), format=fmt),
                alt.Tooltip("change:Q", title=axis_unit("change", unit), format=fmt),
            ],
        )
    )
    known = sorted(set(slopes["tolerance"].dropna().astype(float)))
    limits = pd.DataFrame({"value": known, "text": [f"tolerance {format_value(v, unit)}" for v in known]})
    rule = alt.Chart(limits).mark_rule(strokeDash=[6, 4], color="black").encode(y=alt.Y("value:Q"))
    words = (
        alt.Chart(limits)
        .mark_text(align="left", baseline="bottom", dx=4, dy=-2, fontSize=11)
        .encode(y=alt.Y("value:Q"), x=alt.value(0), text=alt.Text("text:N"))
    )
    return _Layer(layer=[lines, rule, words], height=320)


def correctness_chart(measured: pd.DataFrame, metric: str) -> alt.Chart:
    """One correctness metric's median per build and case, coloured by verdict, in its unit."""
    unit = measured["unit"].iloc[0]
    fmt = value_format(unit)
    return (
        alt.Chart(measured)
        .mark_point(filled=True, size=80)
        .encode(
            x=alt.X("build:N", axis=alt.Axis(labelLimit=400, labelAngle=-20)),
            y=alt.Y("median:Q", title=axis_unit(metric, unit), scale=alt.Scale(zero=False), axis=alt.Axis(format=fmt)),
            color=alt.Color("verdict:N"),
            shape=alt.Shape("dtype:N"),
            tooltip=tooltips(measured, "machine_name", "workload", "case_key", "dtype", "compile", "build", "verdict")
            + [
                alt.Tooltip("median:Q", title=axis_unit(metric, unit), format=fmt),
                alt.Tooltip("tolerance:Q", title=axis_unit("tolerance", unit), format=fmt),
            ],
        )
    )
