"""Every public error pickles, copies and deep-copies as itself.

Errors cross process and thread boundaries (process pools, the fold worker,
logging handlers that pickle records), so each keeps its class, its message and
its attributes. The classes are discovered, so a new one is covered at once.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import re
import sys
from collections.abc import Callable

import pytest

import memory_summary
from memory_summary import ConfigError, Message
from memory_summary import domain as domain_api
from memory_summary.adapters.summarizers.offline import worker
from memory_summary.domain import errors as errors_module


def exception_classes() -> list[type[BaseException]]:
    """Return every exception class the facade, the domain or errors.py offers."""
    found = {
        value
        for module, names in (
            (memory_summary, memory_summary.__all__),
            (domain_api, domain_api.__all__),
            (errors_module, dir(errors_module)),
        )
        for value in (getattr(module, name) for name in names)
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and not value.__name__.startswith("_")
        and value.__module__.startswith("memory_summary")
    }
    return sorted(found, key=lambda cls: cls.__name__)


# Arguments per class whose constructor takes more than one message; any other
# class is built from MESSAGE. A class that cannot be built fails its test.
MESSAGE = ("the store failed: disk full",)
ARGS: dict[str, tuple[object, ...]] = {
    "ConfigError": ("keep_recent", -1, "int >= 0"),
    "ConfigErrors": (
        (
            errors_module.ConfigError("keep_recent", -1, "int >= 0"),
            errors_module.ConfigError("model", "", "a model name"),
        ),
    ),
    "HistoryNotFound": ("s-1", 42),
    "MessageError": ("role", "must be one of user, assistant, system, tool"),
    "PartiallySaved": (
        "s-1",
        [Message("user", "hi", id=7)],
        [Message("assistant", "hello")],
    ),
}
ROUND_TRIPS: dict[str, Callable[[BaseException], BaseException]] = {
    "pickle": lambda error: pickle.loads(pickle.dumps(error)),
    "pickle-0": lambda error: pickle.loads(pickle.dumps(error, protocol=0)),
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
}


def built(cls: type[BaseException]) -> BaseException:
    args = ARGS.get(cls.__name__, MESSAGE)
    try:
        return cls(*args)
    except TypeError as exc:
        pytest.fail(
            f"{cls.__name__} cannot be built from {args!r}: add it to ARGS ({exc})"
        )


def same(left: object, right: object) -> bool:
    """Return whether two values match, comparing exceptions by class, str, attrs."""
    if isinstance(left, BaseException):
        return (
            type(left) is type(right)
            and str(left) == str(right)
            and left.args == getattr(right, "args", None)
            and same(vars(left), vars(right))
        )
    if isinstance(left, (tuple, list)) and isinstance(right, (tuple, list)):
        return (
            type(left) is type(right)
            and len(left) == len(right)
            and all(same(a, b) for a, b in zip(left, right, strict=True))
        )
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(
            same(left[k], right[k]) for k in left
        )
    return left == right


def test_discovery_finds_the_errors_with_constructors_of_their_own():
    names = {cls.__name__ for cls in exception_classes()}

    assert set(ARGS) <= names
    assert {"MemorySummaryError", "StoreUnavailable", "EngineClosed"} <= names


@pytest.mark.parametrize("way", ROUND_TRIPS)
@pytest.mark.parametrize("cls", exception_classes(), ids=lambda cls: cls.__name__)
def test_error_round_trips_as_itself(cls: type[BaseException], way: str):
    error = built(cls)
    if sys.version_info >= (3, 11):
        error.add_note("seen in a worker")  # notes live in the error's __dict__

    copied = ROUND_TRIPS[way](error)

    assert same(error, copied)
    assert copied is not error


def test_fold_worker_sends_a_config_error_back_as_itself():
    error = errors_module.ConfigError("keep_recent", -1, "int >= 0")

    assert worker._portable(error) is error


def _unpicklable_errors() -> list[BaseException]:
    def check(value: object) -> bool:
        return bool(value)

    bad = [lambda value: value, check, [1, lambda: 2]]
    single = [
        errors_module.ConfigError("redactor", value, "a callable") for value in bad
    ]
    return [*single, errors_module.ConfigErrors(tuple(single))]


@pytest.mark.parametrize("way", ["pickle", "pickle-0"])
def test_a_config_error_whose_value_cannot_be_pickled_pickles_with_a_stand_in(way):
    """Before, pickling a ConfigError whose value was a lambda raised: the fold
    worker sent back a RuntimeError instead, and a process pool could not return
    it. Its value arrives as a stand-in of the same repr; all else as itself."""
    for error in _unpicklable_errors():
        copied = ROUND_TRIPS[way](error)

        assert type(copied) is type(error)
        assert str(copied) == str(error)
        assert copied.args == error.args
        assert type(copied.value) is errors_module.UnpicklableValue
        assert repr(copied.value) == repr(error.value)
        assert (copied.field, copied.allowed) == (error.field, error.allowed)
        assert worker._portable(error) is error
    both = _unpicklable_errors()[-1]
    errors = ROUND_TRIPS[way](both).errors
    assert [repr(e.value) for e in errors] == [repr(e.value) for e in both.errors]


@pytest.mark.parametrize("way", ["copy", "deepcopy"])
def test_a_config_error_whose_value_cannot_be_pickled_copies_as_itself(way):
    for error in _unpicklable_errors():
        copied = ROUND_TRIPS[way](error)

        assert same(error, copied)
        assert copied is not error
        if way == "copy" or callable(error.value):  # functions deep-copy as is
            assert copied.value is error.value


class _Holding:
    def __init__(self, held: object) -> None:
        self.held = held


def test_a_config_error_whose_value_holds_a_lock_pickles_with_a_stand_in():
    """A type that refuses to be reduced (a lock, a generator), also as an
    object's attribute: pickle (its default protocol) raised."""
    import threading

    for value in (threading.Lock(), (n for n in range(2)), _Holding(threading.RLock())):
        error = errors_module.ConfigError("store", value, "a store")

        copied = pickle.loads(pickle.dumps(error))

        assert str(copied) == str(error)
        assert repr(copied.value) == repr(value)
        assert copy.copy(error).value is value


def test_a_config_error_keeps_a_value_it_can_pickle_as_itself():
    error = errors_module.ConfigError("ratios", [0.5, {"a": 1}], "floats")
    named = errors_module.ConfigError("redactor", (copy.copy, Message), "a callable")

    assert pickle.loads(pickle.dumps(error)).value == [0.5, {"a": 1}]
    assert pickle.loads(pickle.dumps(named)).value == (copy.copy, Message)
    pattern = re.compile("a+")  # reduced through copyreg's registry
    assert pickle.loads(pickle.dumps(ConfigError("p", pattern, "x"))).value == pattern
    holding = pickle.loads(pickle.dumps(ConfigError("h", _Holding([1]), "x"))).value
    assert type(holding) is _Holding
    assert holding.held == [1]


def test_an_error_subclass_of_a_host_copies_through_its_own_reduce():
    """A host's ``StoreError`` subclass that leaves a connection out of its reduce:
    copies go through it, as ``copy`` does for any exception (the copy hooks are
    ``ConfigError``'s alone)."""
    import threading

    from memory_summary import StoreError

    class HostStoreError(StoreError):
        def __reduce__(self):
            return (type(self), self.args)

    error = HostStoreError("the disk is full")
    error.conn = threading.Lock()

    for copied in (copy.copy(error), copy.deepcopy(error)):
        assert type(copied) is HostStoreError
        assert str(copied) == "the disk is full"
        assert not hasattr(copied, "conn")
