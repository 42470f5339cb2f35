import random
from tests.benchmark_support import make_set, task, hypothesis, scores, JUDGES

def build(seed=1):
    rng = random.Random(seed)
    models = ["m-alpha", "m-beta", "m-gamma", "m-delta"]
    tasks = [task(f"T{i}") for i in range(8)]
    hyps, score_rows, probs, repeats, quality = [], [], [], [], []
    for t in tasks:
        for g in ("Gen Alpha", "Gen Beta"):
            for i in range(5):
                hid = f"{g[4]}{i}"
                fc = {m: rng.random() < 0.5 for m in models}
                hyps.append(hypothesis(t["key"], hid, generator=g, forecasts=fc, first_stage=fc["m-alpha"], selected=all(fc.values()), confirmed=rng.random()<0.5))
                score_rows += scores(t["key"], hid, [rng.choice([0,1,3,4]) for _ in JUDGES])
                for m in models:
                    probs.append({"task": t["key"], "hypothesis": hid, "model": m, "probability": round(rng.random(), 1)})
                    repeats.append({"task": t["key"], "hypothesis": hid, "model": m, "answer": fc[m] if rng.random() < 0.8 else not fc[m]})
                for name, company in JUDGES:
                    quality.append({"task": t["key"], "hypothesis": hid, "judge": name, "originality": rng.randint(1,10), "feasibility": rng.randint(1,10), "clarity": rng.randint(1,10)})
    data = {
        "tasks": tasks, "hypotheses": hyps, "scores": score_rows,
        "forecasters": [{"model": "m-alpha", "company": "Alpha Labs"}, {"model": "m-beta", "company": "Beta AI"}, {"model": "m-gamma", "company": "Gamma Inc"}, {"model": "m-delta", "company": "Delta"}],
        "probabilities": probs, "repeat_forecasts": repeats, "quality_scores": quality,
        "hints": [{"task": t["key"], "hint_score": rng.choice([0,1,2,3])} for t in tasks],
        "key_elements": [{"task": t["key"], "element": e} for t in tasks for e in ("raising the factor", "extends lifespan", "aged mice")],
        "selection_log": [{"query": "aging[MeSH]", "salt": "salt-1", "found": 5}],
        "selection_records": [{"pmid": "1", "status": "excluded", "reason": "review"}, {"pmid": "2", "status": "candidate", "position": 1, "final": True, "task": "T0"}, {"pmid": "3", "status": "candidate", "position": 2}],
    }
    return make_set(data)

def test_smoke(db, client, analyst):
    b = build()
    client.force_login(analyst)
    r = client.get(f"/benchmarks/{b.pk}/statistics/")
    assert r.status_code == 200, r.content[:2000]
    open("/tmp/smoke/page.html","wb").write(r.content)
    j = client.get(f"/api/v1/benchmarks/{b.pk}/statistics").json()
    import json; open("/tmp/smoke/stats.json","w").write(json.dumps(j, indent=1))
    for slug in ("trimmed-lists","rule-enumeration","hint-degree","ranking","originality"):
        assert client.get(f"/benchmarks/{b.pk}/figures/{slug}.png").status_code == 200

def test_bundle(db, client, analyst):
    b = build()
    client.force_login(analyst)
    r1 = client.get(f"/api/v1/benchmarks/{b.pk}/bundle.zip")
    from django.core.cache import cache; cache.clear()
    r2 = client.get(f"/api/v1/benchmarks/{b.pk}/bundle.zip")
    assert r1.content == r2.content
    import zipfile, io
    z = zipfile.ZipFile(io.BytesIO(r1.content))
    open("/tmp/smoke/analysis.json","wb").write(z.read("analysis.json"))
