"""Fault injection for the stand-in of the API server's contract: what a client of the API
server meets in a real cluster (a revoked token, API Priority and Fairness rejecting with 429,
errors, RBAC denials, a watch that goes silent, slow answers, a connection cut mid-response),
each a switch a test flips. ApiServer (standin_api.py) inherits these methods; its request
handler consults them in the order of the API server's filter chain (authentication, then
priority and fairness, then authorization, then the handler)."""


class Faults:
    def _init_faults(self):
        self._revoked = False
        self._throttle = None
        self._errors = None
        self._drop = None
        self._forbidden = set()
        self._latency = (0.0, False)
        self._stalled = False

    def revoke_token(self):
        """Answers 401 Unauthorized to every request (a revoked or expired token) until
        restore_token() or set_token()."""
        with self.lock:
            self._revoked = True

    def restore_token(self):
        """Accepts the token again after revoke_token()."""
        with self.lock:
            self._revoked = False

    def set_token(self, token):
        """Accepts only `token` from now on (a rotated service-account token)."""
        with self.lock:
            self.token = token
            self._revoked = False

    def throttle(self, count=None, retry_after=1, fraction=None, verbs=None):
        """Answers 429 Too Many Requests with `Retry-After: retry_after` to the next `count`
        requests, or to a `fraction` (0-1, seeded) of them until clear_faults(); only for the
        given verbs (e.g. ("list", "watch")) when set. As API Priority and Fairness rejects
        (server/filters/maxinflight.go tooManyRequests): a text/plain body, "Too many requests,
        please try again later."."""
        with self.lock:
            self._throttle = {"left": count, "fraction": fraction, "retry_after": retry_after,
                              "verbs": set(verbs) if verbs else None}

    def fail(self, count=None, code=500, fraction=None, verbs=None):
        """Answers `code` (500 InternalError or 503 ServiceUnavailable, as a Status) to the next
        `count` requests, or to a `fraction` of them until clear_faults(); only for the given
        verbs when set."""
        with self.lock:
            self._errors = {"left": count, "fraction": fraction, "code": code,
                            "verbs": set(verbs) if verbs else None}

    def forbid(self, verb, resource):
        """Answers 403 Forbidden, as RBAC does, to `verb` on `resource` (e.g. "list", "pods")
        until clear_faults()."""
        with self.lock:
            self._forbidden.add((verb, resource))

    def stall_watches(self):
        """Watches stay open and send nothing (no events, no bookmarks, no end at
        timeoutSeconds) until release_watches(); new watches get their headers, then nothing."""
        with self.lock:
            self._stalled = True

    def release_watches(self):
        """Ends a stall: the watches send what happened meanwhile and carry on."""
        with self.lock:
            self._stalled = False
            self.lock.notify_all()

    def add_latency(self, seconds, writes_only=False):
        """Delays every request (or only create/update/delete) by `seconds` before it is
        answered; 0 removes the delay."""
        with self.lock:
            self._latency = (float(seconds), bool(writes_only))

    def drop_connections(self, after_bytes, count=1, verbs=("list",)):
        """Cuts the connection of the next `count` responses of the given verbs after
        `after_bytes` bytes of their body (no chunk terminator, no TLS close_notify)."""
        with self.lock:
            self._drop = {"left": count, "after": int(after_bytes), "verbs": set(verbs)}

    def clear_faults(self):
        """Removes every fault set above (a stall is released)."""
        with self.lock:
            self._revoked = False
            self._throttle = self._errors = self._drop = None
            self._forbidden.clear()
            self._latency = (0.0, False)
            self._stalled = False
            self.lock.notify_all()

    def faults(self):
        """The faults in force, as a dict (for the admin channel and for test messages)."""
        with self.lock:
            return {"revoked": self._revoked, "throttle": _jsonable(self._throttle),
                    "fail": _jsonable(self._errors), "drop": _jsonable(self._drop),
                    "forbidden": sorted(self._forbidden), "latency": list(self._latency),
                    "stalled": self._stalled}

    def _take(self, fault, verb):
        """True when this request is to get `fault` (a dict set above); counts it down."""
        if not fault or (fault["verbs"] and verb not in fault["verbs"]):
            return False
        if fault.get("fraction") is not None:
            return self._rng.random() < fault["fraction"]
        if fault["left"] is None:
            return True
        if fault["left"] > 0:
            fault["left"] -= 1
            return True
        return False



def _jsonable(fault):
    if not fault:
        return None
    return {k: (sorted(v) if isinstance(v, set) else v) for k, v in fault.items()}
