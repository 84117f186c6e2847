"""Property-based fuzzing of every MCP tool's arguments against a real `nsccn mcp` over stdio
(`tests/mcp_fuzzing.py`): a result or a clean tool error, never an internal failure, a stack trace
or a hang. A bounded, derandomized number of examples here (a few seconds);
`python benchmarks/mcp_fuzz.py` runs many more."""

import pytest
from hypothesis import HealthCheck, given, settings

from mcp_fuzzing import StdioSession, arguments, check_result, index_samples
from test_mcp_server import TOOLS, make_repo
from test_mcp_stdio import nsccn_command

EXAMPLES_PER_TOOL = 10
CALL_TIMEOUT_S = 60  # a hang, not a slow call: the server's own time budget is 20 s


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    repo = make_repo(root / "acme_repo")
    cmd, pre = nsccn_command()
    log = root / "server.log"
    s = StdioSession(repo, [cmd, *pre], log_file=log)
    s.samples = index_samples(repo)
    s.schemas = {t.name: t.input_schema for t in s.tools()}
    yield s
    s.close()
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_answers_any_arguments_cleanly(session, tool):
    schema = session.schemas[tool]

    @settings(max_examples=EXAMPLES_PER_TOOL, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(arguments(schema, session.samples))
    def one_call(args):
        check_result(tool, args, session.call(tool, args, CALL_TIMEOUT_S))

    one_call()


def test_every_string_parameter_takes_absurd_strings_cleanly(session):
    """Deterministic companion of the fuzzing: the absurd strings, in every string parameter of
    every tool (the others left at their defaults). Errors must not echo a 100 kB argument back."""
    from mcp_fuzzing import LONG_PATH

    absurd = ["a" * 100_000, LONG_PATH, 'File "/x/auth.py", line ' + "9" * 5000 + ", in f\n", "\x00", "../../etc/passwd"]
    for tool, schema in sorted(session.schemas.items()):
        for param, p in schema.get("properties", {}).items():
            if p.get("type") != "string":
                continue
            for value in absurd:
                args = {param: value}
                check_result(tool, args, session.call(tool, args, CALL_TIMEOUT_S))
