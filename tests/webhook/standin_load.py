"""LoadDriver: watch events at a steady rate on the stand-in of the API server's contract, as a
busy cluster makes them: kubelets updating pod status (MODIFIED: a container restarts, readiness
flips) and controllers replacing pods (churn: a pod DELETED and a replacement ADDED on the same
node, as a ReplicaSet does). Deterministic from its seed; runs in a background thread.

    driver = LoadDriver(api, rate=200, churn=0.1).start()
    ...
    driver.stop()  # returns the number of changes made
"""

import json
import random
import threading
import time
import uuid


def _stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class LoadDriver:
    def __init__(self, api, rate=200.0, churn=0.1, seed=1):
        """`api`: an ApiServer. `rate`: changes per second. `churn`: the share of changes that
        replace a pod (each counts as two events: DELETED then ADDED); the rest are status
        updates (MODIFIED)."""
        self.api = api
        self.rate = float(rate)
        self.churn = float(churn)
        self.rng = random.Random(seed)
        self.changes = 0  # operations done (a replacement counts once)
        self.events = 0  # watch events they make
        self.started = None
        self.stopped_at = None
        self._stop = threading.Event()
        self._thread = None
        self._serial = 0

    def start(self):
        """Starts the background thread; returns self."""
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="standin-load", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stops the thread and waits for it; returns the number of changes made."""
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.stopped_at = time.monotonic()
        return self.changes

    @property
    def running(self):
        return self._thread is not None and self._thread.is_alive()

    def achieved_rate(self):
        """Changes per second since start()."""
        end = self.stopped_at or time.monotonic()
        return self.changes / max(end - (self.started or end), 1e-9)

    def stats(self):
        return {"rate": self.rate, "churn": self.churn, "changes": self.changes,
                "events": self.events, "achieved_rate": round(self.achieved_rate(), 1),
                "running": self.running}

    def _run(self):
        interval = 1.0 / self.rate if self.rate > 0 else 1.0
        next_at = time.monotonic()
        while not self._stop.is_set():
            delay = next_at - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                break
            next_at += interval
            if time.monotonic() - next_at > 1.0:
                next_at = time.monotonic()  # fell behind by over a second: do not burst
            try:
                self._one()
            except (KeyError, IndexError, ValueError):
                continue  # the pod went away meanwhile (another writer): pick another

    def _pick(self):
        store = self.api.store
        with store.cond:
            keys = store.table("pods").keys
            if not keys:
                return None
            key = keys[self.rng.randrange(len(keys))]
            obj = store.table("pods").objects[key]
            return key, obj.data

    def _one(self):
        picked = self._pick()
        if picked is None:
            return
        key, data = picked
        pod = json.loads(data)
        if self.rng.random() < self.churn and pod.get("spec", {}).get("nodeName"):
            self._replace(key, pod)
        else:
            self._update_status(pod)

    def _update_status(self, pod):
        now = _stamp(time.time())
        status = pod.setdefault("status", {})
        statuses = status.get("containerStatuses") or []
        if statuses and self.rng.random() < 0.5:
            c = statuses[self.rng.randrange(len(statuses))]
            c["restartCount"] = c.get("restartCount", 0) + 1
            c["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                             "startedAt": (c.get("state", {}).get("running") or
                                                           {}).get("startedAt", now),
                                             "finishedAt": now,
                                             "containerID": c.get("containerID", "")}}
            c["state"] = {"running": {"startedAt": now}}
        for cond in status.get("conditions") or []:
            if cond.get("type") in ("Ready", "ContainersReady"):
                cond["lastTransitionTime"] = now
        self.api.store.put("pods", pod)
        self.changes += 1
        self.events += 1

    def _replace(self, key, pod):
        ns, _, name = key.partition("/")
        self.api.store.delete("pods", key)
        self._serial += 1
        meta = pod["metadata"]
        base = meta.get("generateName") or (name.rsplit("-", 1)[0] + "-")
        table = self.api.store.table("pods")
        while True:  # a name not taken, as generateName retries
            meta["name"] = "%s%s" % (base, "".join(
                self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5)))
            if ns + "/" + meta["name"] not in table.objects:
                break
        meta["uid"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        meta["creationTimestamp"] = _stamp(time.time())
        meta.pop("resourceVersion", None)
        self.api.store.put("pods", pod)
        self.changes += 1
        self.events += 2
