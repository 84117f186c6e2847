"""Readable scores (issue 41): a search result's score is the probability that it is what the query
sought, fitted for the shipped model (nsccn/ranking/calibration.py), the same number through the
command line and MCP."""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client

from nsccn import ranking
from nsccn.query import calibration
from nsccn.serving.mcp_server import create_server
from nsccn.serving.navigator import Navigator
from test_mcp_server import make_repo

NSCCN = Path(sys.executable).parent / "nsccn"
PHRASE = "validate the token signature and raise an error"  # 3+ terms: the learned ranker
NAME = "login"  # a lookup: the fusion


def test_the_calibration_is_the_shipped_models():
    data = json.loads(calibration.CALIBRATION_FILE.read_text())
    assert data["model_digest"] == calibration.model_digest(ranking.SHIPPED_MODEL), (
        "the shipped ranker changed: fit its scores again with `python benchmarks/score_calibration.py "
        "--dataset HELDOUT.jsonl --workdir WORKDIR --write` (docs/learned-ranking.md, Scores)")
    for name in calibration.SCORERS:
        curve = calibration.curves()[name]
        # a better raw score, or a smaller lead of the best one, is never less likely
        assert curve.w_score + curve.w_gap > 0 and curve.w_gap >= 0
        assert curve.probability(1.0, 1.0) > curve.probability(0.0, 1.0)


@pytest.fixture(scope="module")
def acme(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("scores") / "acme")


@pytest.mark.parametrize("query", [PHRASE, NAME])
def test_scores_are_probabilities_the_same_on_both_fronts(acme, query):
    nav = Navigator(acme)
    try:
        out = nav.search(query, limit=8)
    finally:
        nav.close()
    scores = [r.score for r in out.results]
    assert scores and all(0.0 < s < 1.0 for s in scores), scores
    if "learned" in out.ranking:
        assert scores == sorted(scores, reverse=True)  # the learned order, never contradicted
    if query == NAME:  # the definition of exactly the name typed: first, and likely the one sought
        assert out.results[0].id == "method:acme/auth.py:AuthService.login" and scores[0] > 0.5 > scores[1]

    cli = subprocess.run([str(NSCCN), "search", query, "--limit", "8", "--json"], cwd=acme, capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr

    async def mcp():
        async with Client(create_server(acme)) as c:
            return (await c.call_tool("search_and_rank", {"query": query, "limit": 8})).structured_content

    by_mcp = asyncio.run(mcp())
    by_cli = json.loads(cli.stdout)
    assert [(r["id"], r["score"]) for r in by_cli["results"]] == [(r["id"], r["score"]) for r in by_mcp["results"]]
    assert [r["score"] for r in by_cli["results"]] == [round(s, 4) for s in scores]
