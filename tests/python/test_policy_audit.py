"""The policy and the audit from Python: policy scopes, refusals as
exceptions, counters, trace sinks, budgets and steady-state rules, and
neat.audit() returning what `neat audit` prints."""
import json
import subprocess
import threading

import numpy as np
import pytest

import neat


def strided():
    return neat.zeros([6, 8], "u8").transpose(0, 1)


def test_policy_scopes_nest_and_stay_on_their_thread():
    outer = neat.effective_policy()
    with neat.policy("trace") as name:
        assert name == "allow_with_trace" and neat.effective_policy() == "allow_with_trace"
        with neat.policy("silent"):
            assert neat.effective_policy() == "allow_silent"
            seen = []
            th = threading.Thread(target=lambda: seen.append(neat.effective_policy()))
            th.start()
            th.join()
            assert seen == [outer]  # another thread keeps its own
        assert neat.effective_policy() == "allow_with_trace"
    assert neat.effective_policy() == outer


def test_a_graph_built_inside_a_policy_scope_takes_it():
    def graph():
        g = neat.Graph("scoped")
        g.add_source("s", neat.element("synthetic", format="NV12", size=(32, 16), frames=2))
        g.add_stage("c", neat.element("cast", to="f32"))
        g.add_sink("o", neat.AppSink(capacity=4))
        return g.chain("s", "c", "o")

    with neat.policy("strict"):
        with pytest.raises(neat.FailedPrecondition, match="Strict refuses"):
            graph().build()
    with neat.policy("trace"), neat.record() as rec:
        report = graph().run()
    assert report["frames"]["consumed"] == 2
    implicit = [e for e in rec.events if not e["explicit"]]
    assert implicit and {e["edge"] for e in implicit} == {"s->c"}


def test_a_refusal_is_a_python_exception_with_the_same_message_and_fix():
    t = neat.zeros([16], "u8")
    keep = t.reshape([4, 4])
    with neat.policy("strict"):
        with pytest.raises(neat.FailedPrecondition) as err:
            t.make_writable(donation="must_donate")
    assert err.value.code == "failed_precondition"
    assert err.value.message == str(err.value)
    assert "16 B" in err.value.message or "16 bytes" in err.value.message
    del keep


def test_counters_rows_and_kinds():
    before = neat.counters()
    strided().contiguous()
    spent = neat.counters().since(before)
    assert spent.count == 1 and spent.bytes == 48 and spent.refused == 0
    assert spent.by_kind("pack")["count"] == 1
    (row,) = spent.rows()
    assert row["kind"] == "pack" and row["reason"] == "stride_mismatch" and row["explicit"]
    assert "neat_conversions_total" in neat.metrics_text()


def test_jsonl_and_chrome_traces_and_the_audit_match_the_cli(tmp_path, neat_cli):
    jsonl, chrome = tmp_path / "run.jsonl", tmp_path / "run.trace.json"
    with neat.trace_jsonl(str(jsonl)) as j, neat.trace_chrome(str(chrome)) as c:
        strided().contiguous()
        strided().clone()
    assert j.events == 2 and c.events == 2
    events = json.loads(chrome.read_text())  # the JSON Array Format, closed by close()
    assert events[0]["name"] == "neat_trace" and events[-1]["name"] == "neat_trace_end"
    report = neat.audit(str(jsonl))
    assert report.conversions == 2 and report.bytes == 96
    assert {r["reason"] for r in report.rows} == {"stride_mismatch", "user_request"}
    sites = [s["where"] for r in report.rows for s in r["top_sites"]]
    assert all("test_policy_audit.py" in w for w in sites)
    cli = subprocess.run([neat_cli, "audit", str(jsonl)], capture_output=True, text=True,
                         check=True).stdout
    assert str(report) == cli
    cli_json = subprocess.run([neat_cli, "audit", "--format", "json", str(jsonl)],
                              capture_output=True, text=True, check=True).stdout
    assert json.loads(report.json()) == json.loads(cli_json)
    assert neat.audit([str(jsonl), str(chrome)]).conversions == 4


def test_audit_filters_and_latency(tmp_path):
    path = tmp_path / "graph.jsonl"
    g = neat.pipeline("synthetic format=NV12 size=64x48 frames=5 ! convert format=RGB ! appsink",
                      policy="trace", name="cam")
    with neat.trace_jsonl(str(path)):
        g.run()
    full = neat.audit(str(path))
    assert full.conversions == 5 and full.rows[0]["stage"] == "convert"
    assert full.rows[0]["frames"] == 5 and full.rows[0]["bytes_per_frame"] == 64 * 48 * 3
    assert full.latency and full.latency[0]["sink"] == "appsink" and full.latency[0]["count"] == 5
    assert neat.audit(str(path), graph="other").conversions == 0
    assert neat.audit(str(path), stage="convert").conversions == 5


@pytest.mark.parametrize("call, error", [
    (lambda: neat.audit("/nonexistent/trace.jsonl"), neat.Error),
    (lambda: neat.audit([]), neat.InvalidArgument),
    (lambda: neat.audit(__file__), neat.InvalidArgument),
    (lambda: neat.audit(__file__, since="yesterday"), neat.InvalidArgument),
    (lambda: neat.policy("lenient"), neat.InvalidArgument),
    (lambda: neat.set_process_policy("x"), neat.InvalidArgument),
    (lambda: neat.trace_jsonl("/nonexistent/dir/x.jsonl"), neat.Error),
    (lambda: neat.trace_jsonl("/tmp/x.jsonl", max_bytes=-1), neat.InvalidArgument),
    (lambda: neat.copy_budget(), neat.InvalidArgument),
    (lambda: neat.copy_budget(max_bytes_per_frame=-5), neat.InvalidArgument),
    (lambda: neat.copy_budget(max_bytes_per_frame=1, action="explode"), neat.InvalidArgument),
    (lambda: neat.steady_state(-1), neat.InvalidArgument),
    (lambda: neat.steady_state(1, kinds=[]), neat.InvalidArgument),
    (lambda: neat.steady_state(1, kinds=["teleport"]), neat.InvalidArgument),
    (lambda: neat.counters().by_kind("teleport"), neat.InvalidArgument),
])
def test_bad_telemetry_input_raises_a_typed_error(call, error):
    with pytest.raises(error):
        call()


def test_policy_scopes_must_close_in_order():
    a, b = neat.policy("trace"), neat.policy("silent")
    a.__enter__()
    b.__enter__()
    with pytest.raises(neat.FailedPrecondition, match="order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)


def test_a_failing_budget_refuses_the_copy_before_it_runs():
    g = neat.Graph("budget", policy="trace")
    g.add_source("s", neat.element("synthetic", format="NV12", size=(32, 16), frames=3))
    g.add_stage("c", neat.element("cast", to="f32"))
    g.add_sink("o", neat.AppSink(capacity=4)).chain("s", "c", "o")
    g.add_budget(max_bytes_per_frame=100, action="fail")
    with pytest.raises(neat.FailedPrecondition, match="budget"):
        g.run()


def test_a_process_budget_and_a_steady_state_rule():
    with neat.copy_budget(max_count_per_frame=0, action="count") as rule:
        assert rule.breach_count == 0
        rule.check()
    with neat.steady_state(2, graph="steady", action="count") as canary:
        g = neat.pipeline("synthetic format=NV12 size=32x16 frames=5 ! convert format=RGB ! appsink",
                          policy="trace", name="steady")
        g.run()
        assert canary.breach_count == 3  # frames 2, 3, 4 converted after the steady point
        assert canary.breaches[0]["frame"] == 2
        with pytest.raises(neat.FailedPrecondition):
            canary.check()


def test_an_explicit_copy_inside_record_names_this_line():
    with neat.record() as rec:
        strided().clone(); line = __import__("inspect").currentframe().f_lineno  # noqa: E702
    (event,) = rec.events
    assert event["file"].endswith("test_policy_audit.py") and event["line"] == line
    assert event["function"] == "test_an_explicit_copy_inside_record_names_this_line"


def test_a_trace_cut_short_is_audited_up_to_its_cut(tmp_path):
    path = tmp_path / "cut.jsonl"
    with neat.trace_jsonl(str(path)):
        strided().contiguous()
    whole = path.read_text().splitlines()
    assert json.loads(whole[-1])["type"] == "end"
    assert neat.audit(str(path)).cut_short == []
    path.write_text("\n".join(whole[:-1]) + "\n")  # as kill -9 leaves it
    report = neat.audit(str(path))
    assert report.conversions == 1
    (cut,) = report.cut_short
    assert cut["events"] == 1 and "is cut short" in cut["message"]
    assert "is cut short" in str(report)
