"""Validation against JSON Schema Draft 2020-12 for the structured-output tests and the
schema corpus (tools/make_schema_corpus.py): jsonschema's Draft 2020-12 validator with
its format checker. Some of that checker's formats need packages this project does not
install (date-time and time: rfc3339-validator, duration: isoduration, uri: rfc3987,
hostname: fqdn); without them jsonschema skips the format silently. Where one is missing,
a check of our own takes its place, written from the RFC grammar, so that "format"
is always checked, whatever is installed."""
import datetime
import re

import jsonschema
from jsonschema import Draft202012Validator

FORMAT_CHECKER = jsonschema.FormatChecker(formats=())
FORMAT_CHECKER.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)


def _fallback(name):
    """Registers the decorated check for `name` only if jsonschema has none."""
    def register(check):
        if name not in FORMAT_CHECKER.checkers:
            FORMAT_CHECKER.checks(name, raises=ValueError)(check)
        return check
    return register


# RFC 3339 section 5.6: full-date "T" full-time, with a mandatory offset (Z or +hh:mm).
_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(\.\d+)?"
                        r"(Z|[+-]([01]\d|2[0-3]):[0-5]\d)", re.IGNORECASE)


@_fallback("date-time")
def _is_date_time(instance):
    if not isinstance(instance, str):
        return True
    match = _DATE_TIME.fullmatch(instance)
    if not match:
        return False
    datetime.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))  # raises on Feb 30
    return True


@_fallback("time")
def _is_time(instance):
    return not isinstance(instance, str) or _is_date_time("1970-01-01T" + instance)


# RFC 3339 appendix A: P followed by a date part (years, months, days, in that order, each
# optional but not all absent, then an optional time part) or by weeks alone.
_DURATION = re.compile(r"P(?:\d+W|(?=\d|T\d)(?:\d+Y)?(?:\d+M)?(?:\d+D)?"
                       r"(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+(?:[.,]\d+)?S)?)?)")


@_fallback("duration")
def _is_duration(instance):
    return not isinstance(instance, str) or bool(_DURATION.fullmatch(instance))


# RFC 3986 section 3: an absolute URI is a scheme, ":", then unreserved, reserved or
# percent-encoded characters (the full grammar is not needed to reject what a model writes
# wrong: spaces, quotes, a missing scheme, a bad escape).
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")


@_fallback("uri")
def _is_uri(instance):
    return not isinstance(instance, str) or bool(_URI.fullmatch(instance))


# RFC 1123 section 2.1: dot-separated labels of letters, digits and inner hyphens, 1 to 63
# characters each, 253 in all.
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


@_fallback("hostname")
def _is_hostname(instance):
    if not isinstance(instance, str):
        return True
    name = instance[:-1] if instance.endswith(".") else instance
    return 0 < len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split("."))


def validator(schema):
    return Draft202012Validator(schema, format_checker=FORMAT_CHECKER)


def validation_error(instance, schema):
    """None if `instance` is valid against `schema`, else the first error in one line."""
    error = jsonschema.exceptions.best_match(validator(schema).iter_errors(instance))
    if error is None:
        return None
    where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where}: {error.message}"
