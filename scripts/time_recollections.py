"""Time the recollection maintenance step (memory/policies/exocortex/services.recollections_make) on the first
LoCoMo conversation imported into an isolated store: its first call in the process and the next 20,
one per question asked as a new turn (gather, UMAP + HDBSCAN, guard, summaries, their embeddings and
the writes).

    PYTHONPATH=$PWD .venv/bin/python scripts/time_recollections.py
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")
import django  # noqa: E402

django.setup()
from django.conf import settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory.benchmarks.common import bench_env  # noqa: E402
from memory.formats.locomo import load_conversations  # noqa: E402
from memory.models import UserMemoryState  # noqa: E402
from memory.policies.exocortex.services import recollections_make  # noqa: E402
from memory.services.importing import conversation_import  # noqa: E402
from memory.services.pages import page_start  # noqa: E402
from memory.services.turns import page_complete  # noqa: E402

DATA = os.environ.get("LOCOMO", os.path.join(os.path.dirname(os.getcwd()), "shared", "data", "locomo_dev2.json"))
conv = load_conversations(DATA)[0]
with bench_env() as env:
    settings.MEMORYOS = {**settings.MEMORYOS, "EXOCORTEX_RECOLLECTIONS": "off"}
    user = env.make_user(prefix="rec")
    t = time.perf_counter()
    report = conversation_import(user=user, conversation=conv, progress=False)
    print("import", report.pages, "pages", round(time.perf_counter() - t, 1), "s", flush=True)
    settings.MEMORYOS = {**settings.MEMORYOS, "EXOCORTEX_RECOLLECTIONS": "always"}
    texts = [qa["question"] for qa in conv.qa if isinstance(qa.get("question"), str)][:21]
    timings, made = [], 0
    for text in texts:
        page = page_complete(page=page_start(user=user, query=text), response="", reply_model="test")
        UserMemoryState.objects.filter(user=user).update(recollected_seq=page.seq - 1)
        t = time.perf_counter()
        out = recollections_make(user_id=user.pk, now=timezone.now())
        timings.append((time.perf_counter() - t) * 1000)
        made += len(out)
    print("cold first call ms", round(timings[0], 1))
    warm = sorted(timings[1:])
    print("warm ms p50", round(statistics.median(warm), 1), "p95", round(warm[int(0.95 * (len(warm) - 1))], 1),
          "n", len(warm), "recollections made", made)
