"""A spy on token_mask's C walks: which of them the masks of a test ran, and with what."""

from strictgen.compile import _walk, token_mask


def spy_walk(monkeypatch, name: str, arg: int) -> list:
    """Replace `_walk.<name>` for token_mask by one that records argument `arg` of each call (the
    state it walked from, say) in the list returned, then walks as before."""
    calls = []
    walk = getattr(_walk, name)

    class Spy:
        def __getattr__(self, attr):
            return getattr(_walk, attr)

    def spied(*args):
        calls.append(args[arg])
        return walk(*args)

    spy = Spy()
    setattr(spy, name, spied)
    monkeypatch.setattr(token_mask, "_walk", spy)
    return calls
