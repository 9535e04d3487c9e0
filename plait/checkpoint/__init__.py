"""Durable threads: the saver interface (``plait.checkpoint.base``) and its backends.

Import a saver from its own module: ``plait.checkpoint.memory``,
``plait.checkpoint.sqlite`` (``.aio``), ``plait.checkpoint.postgres`` (``.aio``).
"""
