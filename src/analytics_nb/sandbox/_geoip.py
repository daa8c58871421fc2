"""GeoIP lookup for decide: client IP -> the seven ``$geoip_*`` person properties.

Uses the offline GeoLite2 database of the optional ``maxminddb-geolite2`` package. Without that package, or
for loopback / private / unknown addresses, the lookup returns no properties (as the real service does for
``127.0.0.1`` and ``192.168.*``).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import threading
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Protocol

__all__ = ["GEOIP_INSTALLED", "GEOIP_KEYS", "client_ip", "geoip_available", "geoip_properties"]

GEOIP_KEYS: tuple[str, ...] = (
    "$geoip_city_name",
    "$geoip_country_name",
    "$geoip_country_code",
    "$geoip_continent_name",
    "$geoip_continent_code",
    "$geoip_postal_code",
    "$geoip_time_zone",
)


class _Reader(Protocol):
    def get(self, ip: str) -> Any: ...


#: The one check for the optional dependency: is the `maxminddb-geolite2` package installed?
GEOIP_INSTALLED = importlib.util.find_spec("geolite2") is not None

_lock = threading.Lock()
_reader: _Reader | None = None
_opened = False


def _get_reader() -> _Reader | None:
    """The GeoLite2 reader, opened on first use; None without the package (or when its database cannot be
    read: a broken install means no geo, never a 500)."""
    global _reader, _opened
    if not GEOIP_INSTALLED:
        return None
    with _lock:
        if not _opened:
            _opened = True
            from geolite2 import geolite2

            try:
                _reader = geolite2.reader()
            except OSError:
                _reader = None
    return _reader


def geoip_available() -> bool:
    """True when the optional GeoLite2 database can be read (``pip install analytics-nb[geo]``)."""
    return _get_reader() is not None


def client_ip(headers: Mapping[str, str], peer: str | None) -> str | None:
    """The client address: the first ``X-Forwarded-For`` entry (port stripped), else the socket peer."""
    forwarded = headers.get("x-forwarded-for")
    if forwarded:
        first = forwarded.split(",", 1)[0].strip()
        if first:
            return _strip_port(first)
    return peer


def _strip_port(address: str) -> str:
    if address.startswith("["):  # [v6]:port
        end = address.find("]")
        return address[1:end] if end > 0 else address
    if address.count(":") == 1:  # v4:port
        return address.split(":", 1)[0]
    return address


def _name(record: Any, section: str) -> str | None:
    part = record.get(section) if isinstance(record, dict) else None
    if not isinstance(part, dict):
        return None
    names = part.get("names")
    if isinstance(names, dict):
        value = names.get("en")
        return value if isinstance(value, str) else None
    return None


def _section(record: dict[str, Any], name: str) -> dict[str, Any]:
    part = record.get(name)
    return part if isinstance(part, dict) else {}


@lru_cache(maxsize=4096)
def _lookup(ip: str) -> tuple[tuple[str, str], ...]:
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return ()
    if not parsed.is_global:
        return ()
    reader = _get_reader()
    if reader is None:
        return ()
    try:
        record = reader.get(str(parsed))
    except Exception:  # a corrupt or unreadable database means no geo, never a 500
        return ()
    if not isinstance(record, dict):
        return ()
    country, continent, postal, location = (
        _section(record, name) for name in ("country", "continent", "postal", "location")
    )
    values = {
        "$geoip_city_name": _name(record, "city"),
        "$geoip_country_name": _name(record, "country"),
        "$geoip_country_code": country.get("iso_code"),
        "$geoip_continent_name": _name(record, "continent"),
        "$geoip_continent_code": continent.get("code"),
        "$geoip_postal_code": postal.get("code"),
        "$geoip_time_zone": location.get("time_zone"),
    }
    return tuple((k, v) for k, v in values.items() if isinstance(v, str) and v)


def geoip_properties(ip: str | None) -> dict[str, str]:
    """The ``$geoip_*`` properties known for ``ip`` (only the keys the database has); empty when unknown."""
    if not ip:
        return {}
    return dict(_lookup(ip))
