"""Channels: how the writes of one superstep to one state key are merged."""

from plait.channels.base import BaseChannel
from plait.channels.binop import BinaryOperatorAggregate
from plait.channels.last_value import LastValue

__all__ = ["BaseChannel", "BinaryOperatorAggregate", "LastValue"]
