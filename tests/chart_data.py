"""The charts a page drew under Streamlit's AppTest, read back as Vega-Lite specs with their rows: what the
browser would be sent, without a browser."""

from __future__ import annotations

import json

import pyarrow as pa


def drawn_charts(at) -> list[tuple[dict, dict[str, list[dict]]]]:
    """Each chart of the page: (its spec, {dataset name: rows}); a layer's data names its dataset."""
    out = []
    for chart in at.get("vega_lite_chart"):
        rows = {d.name: pa.ipc.open_stream(d.data.data).read_all().to_pylist() for d in chart.proto.datasets}
        out.append((json.loads(chart.proto.spec), rows))
    return out


def layer_rows(spec: dict, rows: dict[str, list[dict]]) -> list[list[dict]]:
    """The rows each layer of a layered spec draws, in layer order."""
    return [rows.get(layer.get("data", {}).get("name"), []) for layer in spec["layer"]]
