"""Field and label selectors, as the API server parses and applies them (k8s.io/apimachinery
pkg/fields/selector.go and pkg/labels/selector.go), over the stand-in's stored fields.

A selector becomes match(key, obj) -> bool, where obj is a standin_store.Obj (its two
resource-specific field values and its labels) and key gives metadata.namespace/name.
"""

import re

from standin_store import split_key


class SelectorError(ValueError):
    """An invalid selector: the API server answers 400 BadRequest with this message."""


def parse_fields(text):
    """"spec.nodeName=x,status.phase!=Failed" -> [(field, op, value)]; op is "=" or "!="."""
    out = []
    for term in filter(None, (text or "").split(",")):
        if "!=" in term:
            field, value = term.split("!=", 1)
            out.append((field.strip(), "!=", value))
        elif "==" in term:
            field, value = term.split("==", 1)
            out.append((field.strip(), "=", value))
        elif "=" in term:
            field, value = term.split("=", 1)
            out.append((field.strip(), "=", value))
        else:
            raise SelectorError("invalid selector: '%s'; can't understand '%s'" % (text, term))
    return out


def _split_terms(text):
    """Splits on commas outside parentheses ("a in (x,y),b" -> ["a in (x,y)", "b"])."""
    terms, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    terms.append("".join(cur))
    return [t.strip() for t in terms if t.strip()]


_SET_TERM = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$")


def parse_labels(text):
    """Equality- and set-based label selector -> [(key, op, values)]; op is one of
    "=", "!=", "in", "notin", "exists", "!exists"."""
    out = []
    for term in _split_terms(text or ""):
        m = _SET_TERM.match(term)
        if m:
            values = {v.strip() for v in m.group(3).split(",") if v.strip()}
            out.append((m.group(1), m.group(2), values))
        elif "!=" in term:
            k, v = term.split("!=", 1)
            out.append((k.strip(), "!=", {v.strip()}))
        elif "==" in term:
            k, v = term.split("==", 1)
            out.append((k.strip(), "=", {v.strip()}))
        elif "=" in term:
            k, v = term.split("=", 1)
            out.append((k.strip(), "=", {v.strip()}))
        elif term.startswith("!"):
            out.append((term[1:].strip(), "!exists", None))
        elif re.match(r"^[A-Za-z0-9./_-]+$", term):
            out.append((term, "exists", None))
        else:
            raise SelectorError("unable to parse requirement: %s" % term)
    return out


def _label_ok(labels, key, op, values):
    have = (labels or {}).get(key)
    if op == "exists":
        return have is not None
    if op == "!exists":
        return have is None
    if op in ("=", "in"):
        return have is not None and have in values
    return have is None or have not in values  # "!=", "notin"


def matcher(resource, field_text="", label_text=""):
    """match(key, obj), or None when both selectors are empty. Raises SelectorError for a field
    the resource does not support, with the message the API server gives (runtime field label
    conversion: "field label not supported: X", wrapped by the list handler)."""
    fields = parse_fields(field_text)
    labels = parse_labels(label_text)
    if not fields and not labels:
        return None
    getters = []
    for field, op, value in fields:
        if field == "metadata.name":
            getter = (lambda key, obj: split_key(resource, key)[1])
        elif field == "metadata.namespace" and resource.namespaced:
            getter = (lambda key, obj: split_key(resource, key)[0])
        elif resource.fields[:1] == (field,):
            getter = (lambda key, obj: obj.f0)
        elif resource.fields[1:2] == (field,):
            getter = (lambda key, obj: obj.f1)
        else:
            raise SelectorError(
                'Unable to find {"%s" "%s" "%s"} that match label selector "%s", field selector '
                '"%s": field label not supported: %s' % (
                    resource.group, resource.version, resource.plural, label_text or "",
                    field_text, field))
        getters.append((getter, op == "=", value))

    def match(key, obj):
        for getter, equal, value in getters:
            if (getter(key, obj) == value) != equal:
                return False
        for k, op, values in labels:
            if not _label_ok(obj.labels, k, op, values):
                return False
        return True

    return match


def node_name_of(resource, field_text):
    """The node an exact spec.nodeName=X term names (for the pods' node index), else None."""
    if resource.plural != "pods":
        return None
    for field, op, value in parse_fields(field_text):
        if field == "spec.nodeName" and op == "=":
            return value
    return None
