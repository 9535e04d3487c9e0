"""Channels: how the writes of one superstep to one state key are merged."""

from plait.channels.any_value import AnyValue
from plait.channels.base import BaseChannel
from plait.channels.binop import BinaryOperatorAggregate
from plait.channels.delta import DeltaChannel
from plait.channels.ephemeral_value import EphemeralValue
from plait.channels.last_value import LastValue, LastValueAfterFinish
from plait.channels.named_barrier_value import NamedBarrierValue, NamedBarrierValueAfterFinish
from plait.channels.topic import Topic
from plait.channels.untracked_value import UntrackedValue

__all__ = [
    "AnyValue",
    "BaseChannel",
    "BinaryOperatorAggregate",
    "DeltaChannel",
    "EphemeralValue",
    "LastValue",
    "LastValueAfterFinish",
    "NamedBarrierValue",
    "NamedBarrierValueAfterFinish",
    "Topic",
    "UntrackedValue",
]
