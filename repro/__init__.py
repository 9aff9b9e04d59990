"""Replay, reduce and golden-file tooling (replay lives in tirc.commands for now)."""
