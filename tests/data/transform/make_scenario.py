#!/usr/bin/env python3
"""Regenerate the recorded transform scenario (OpenAI chat answers) from
src/*.cu: stage 1, a stage-2 attempt that does not compile, the judge's
diagnosis, the fixed stage 2, and the EVOLVE marking.
Run from tests/data/transform/: python3 make_scenario.py"""
import json, os

def answer(text, n, tin, tout):
    return {"id": "chatcmpl-transform-%d" % n, "object": "chat.completion",
            "created": 1764400000 + n, "model": "gpt-4.1-2025-04-14",
            "choices": [{"index": 0, "message": {"role": "assistant",
                         "content": text, "refusal": None},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": tin, "completion_tokens": tout,
                      "total_tokens": tin + tout}}

def code(name):
    return open(os.path.join("src", name)).read()

steps = [
    ("stage1", "```cuda\n" + code("stage1.cu") + "```\nAg is now a symmetric "
     "window (RT_WINDOW) and wl_setup creates a device communicator with "
     "128 LSA barriers; the host all-gather is unchanged.\n", 9000, 1400),
    ("stage2-bad", "```cuda\n" + code("stage2_bad.cu") + "```\nThe host "
     "all-gather is replaced by ag_push_kernel (LSA stores + barriers).\n",
     11000, 1900),
    ("judge", "Root cause: the ncclLsaBarrierSession constructor call in "
     "ag_push_kernel does not compile. It passes `ncclTeamLsa(dc)` (an "
     "ncclTeam value) where the short form expects the tag "
     "`ncclTeamTagLsa()`; the general form with an ncclTeam also needs an "
     "ncclLsaBarrierHandle, which is not given. Fix: construct it as "
     "`ncclLsaBarrierSession<ncclCoopCta> bar(ncclCoopCta(), dc, "
     "ncclTeamTagLsa(), blockIdx.x);`. Nothing else in the build log "
     "points at other errors.\n", 6000, 150),
    ("stage2", "```cuda\n" + code("stage2.cu") + "```\nFixed the barrier "
     "session constructor (ncclTeamTagLsa()).\n", 13000, 1900),
    ("mark", "```cuda\n" + code("marked.cu") + "```\n", 8000, 1950),
]
os.makedirs("gemm_allgather", exist_ok=True)
for i, (tag, text, tin, tout) in enumerate(steps, 1):
    with open("gemm_allgather/%03d-%s.http" % (i, tag), "w") as f:
        f.write("# recorded transform step %d: %s\n\n" % (i, tag))
        f.write(json.dumps(answer(text, i, tin, tout), indent=1) + "\n")
