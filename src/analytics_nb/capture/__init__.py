"""Capture helpers: flag attribution on events, ``$feature_flag_called`` with dedup, and bulk capture.

Functions that talk to the service take the client first. The plain ones take a sync ``Client``, block and
return the result; the ``a``-prefixed twins are coroutines for ``AsyncClient``.
"""

from __future__ import annotations

from analytics_nb.capture._attribution import attribute, feature_properties, flag_values
from analytics_nb.capture._bulk import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_SIZE,
    capture_event,
    capture_frame,
)
from analytics_nb.capture._bulk_twins import CaptureFrameOptions, acapture_event, acapture_frame
from analytics_nb.capture._events import (
    MAX_EVENT_BYTES,
    MAX_REQUEST_BYTES,
    EventError,
    MissingTimestampWarning,
    UuidPolicy,
    build_event,
)
from analytics_nb.capture._flag_called import (
    FLAG_CALLED_CACHE_SIZE,
    FlagCalledCache,
    UnknownFlagKeyError,
    UnknownFlagKeyWarning,
    flag_called,
    flag_called_cache,
    flag_called_frame,
    flag_called_properties,
)
from analytics_nb.capture._flag_called_twins import aflag_called, aflag_called_frame
from analytics_nb.capture._journal import CaptureJournalWarning
from analytics_nb.capture._runs import AlreadySentWarning, Resume, ResumedRunWarning
from analytics_nb.capture._values import NaivePolicy, json_value, new_uuid7

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_SIZE",
    "FLAG_CALLED_CACHE_SIZE",
    "MAX_EVENT_BYTES",
    "MAX_REQUEST_BYTES",
    "AlreadySentWarning",
    "CaptureFrameOptions",
    "CaptureJournalWarning",
    "EventError",
    "FlagCalledCache",
    "MissingTimestampWarning",
    "NaivePolicy",
    "Resume",
    "ResumedRunWarning",
    "UnknownFlagKeyError",
    "UnknownFlagKeyWarning",
    "UuidPolicy",
    "acapture_event",
    "acapture_frame",
    "aflag_called",
    "aflag_called_frame",
    "attribute",
    "build_event",
    "capture_event",
    "capture_frame",
    "feature_properties",
    "flag_called",
    "flag_called_cache",
    "flag_called_frame",
    "flag_called_properties",
    "flag_values",
    "json_value",
    "new_uuid7",
]
