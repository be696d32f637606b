"""Generation from Python: ``aotrt.load_generator`` and ``aotrt.load_program``.

    lm = aotrt.load_generator("llm.pt2")            # a package of aotrt_tools.llm, or torch's own
    lm.generate([1, 15043, 29892], max_new_tokens=32)            # -> list of new token ids
    for token in lm.stream([1, 15043], max_new_tokens=32): ...   # each id as it comes
    seq = lm.new_sequence()                                       # a conversation: its own cache
    lm.generate(prompt, sequence=seq); lm.generate(more, sequence=seq)
    lm.generate_text("Hello", max_new_tokens=32)     # with NAME.tokenizer.json beside the package

Text goes through Hugging Face's ``tokenizers`` (imported only when text is asked for).
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Iterator, Sequence as Seq

from . import _aotrt


def _sampling(kw: dict[str, Any]) -> dict[str, Any]:
    allowed = {"max_new_tokens", "temperature", "top_k", "top_p", "seed", "eos_token_ids"}
    unknown = set(kw) - allowed
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    return kw


class LanguageModel:
    """A generation package: every graph over one copy of the weights, sequences with their own
    caches, sampling on the model's device. Several threads may generate at once, each in its
    own sequence."""

    def __init__(self, generator: "_aotrt.Generator", path: str, tokenizer: Any = None):
        self._gen = generator
        self.path = path
        self._tokenizer = tokenizer

    @property
    def config(self) -> dict[str, Any]:
        """What the package is: kind, graphs, max_cache_len, vocab_size, eos_token_ids, ..."""
        return self._gen.config

    @property
    def program(self) -> "_aotrt.Program":
        return self._gen.program

    def new_sequence(self) -> "_aotrt.Sequence":
        """A new sequence (a conversation): its own cache, empty."""
        return self._gen.new_sequence()

    def generate(self, prompt_ids: Seq[int], *, sequence: "_aotrt.Sequence | None" = None,
                 return_result: bool = False, **kw: Any) -> "list[int] | _aotrt.GenerateResult":
        """The new token ids after ``prompt_ids`` (max_new_tokens=64, temperature=0 (greedy),
        top_k=0, top_p=1, seed=0, eos_token_ids=None: the package's). In ``sequence`` the prompt
        continues it; without, a new sequence is used and dropped. ``return_result=True`` gives
        the GenerateResult (tokens, stop_reason, ttft_ms, tokens_per_s, inter_token_ms)."""
        r = self._gen.generate([int(t) for t in prompt_ids], sequence=sequence, **_sampling(kw))
        return r if return_result else list(r.tokens)

    def generate_from(self, encoder_input: Any, *, sequence: "_aotrt.Sequence | None" = None,
                      return_result: bool = False, **kw: Any) -> "list[int] | _aotrt.GenerateResult":
        """Encoder-decoder packages (Whisper): runs the encoder on ``encoder_input`` (log-mel
        features [1, n_mels, frames] as numpy or torch), then generates after the package's
        decoder start tokens; the new token ids (the start tokens excluded). ``sequence`` must be
        empty (a new one is used when none is given). Keywords as generate()."""
        seq = sequence if sequence is not None else self._gen.new_sequence()
        r = self._gen.generate_from(seq, encoder_input, **_sampling(kw))
        return r if return_result else list(r.tokens)

    def stream(self, prompt_ids: Seq[int], *, sequence: "_aotrt.Sequence | None" = None,
               **kw: Any) -> Iterator[int]:
        """Yields each new token id as soon as it is known. Leaving the loop early stops the
        generation after the token being made."""
        tokens: "queue.Queue[tuple[str, Any]]" = queue.Queue()
        stop = threading.Event()

        def on_token(token: int) -> bool:
            tokens.put(("token", token))
            return not stop.is_set()

        def work() -> None:
            try:
                self._gen.generate([int(t) for t in prompt_ids], sequence=sequence,
                                   on_token=on_token, **_sampling(kw))
                tokens.put(("done", None))
            except BaseException as e:  # raised in the consumer's thread
                tokens.put(("error", e))

        thread = threading.Thread(target=work, name="aotrt-generate", daemon=True)
        thread.start()
        try:
            while True:
                kind, value = tokens.get()
                if kind == "token":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    return
        finally:
            stop.set()
            thread.join()

    # --- text ------------------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        """The package's tokenizer (``tokenizers.Tokenizer`` from NAME.tokenizer.json beside the
        package, or the one given to load_generator); None when there is none."""
        return self._tokenizer

    def _need_tokenizer(self) -> Any:
        if self._tokenizer is None:
            raise _aotrt_error("InvalidArgumentError",
                               f"{self.path} has no tokenizer: put NAME.tokenizer.json beside the "
                               "package or pass tokenizer= to aotrt.load_generator")
        return self._tokenizer

    def generate_text(self, prompt: str, **kw: Any) -> str:
        """The text generated after ``prompt`` (special tokens dropped)."""
        tok = self._need_tokenizer()
        ids = tok.encode(prompt).ids
        return tok.decode(self.generate(ids, **kw), skip_special_tokens=True)

    def stream_text(self, prompt: str, **kw: Any) -> Iterator[str]:
        """Yields the text as tokens come (a piece is yielded once it decodes to whole
        characters)."""
        tok = self._need_tokenizer()
        ids = tok.encode(prompt).ids
        new: list[int] = []
        shown = ""
        for token in self.stream(ids, **kw):
            new.append(token)
            text = tok.decode(new, skip_special_tokens=True)
            if text.endswith("\ufffd"):
                continue  # an incomplete character: wait for the next token
            if len(text) > len(shown):
                yield text[len(shown):]
                shown = text


def _aotrt_error(kind: str, message: str) -> Exception:
    from . import _errors
    return getattr(_errors, kind)(message)


def _find_tokenizer(path: str, tokenizer: Any) -> Any:
    if tokenizer is not None and not isinstance(tokenizer, (str, os.PathLike)):
        return tokenizer  # a tokenizers.Tokenizer, or anything with encode/decode
    file = os.fspath(tokenizer) if tokenizer is not None else None
    if file is None:
        stem = path[:-4] if path.endswith(".pt2") else path
        candidate = stem + ".tokenizer.json"
        if not os.path.exists(candidate):
            return None
        file = candidate
    try:
        from tokenizers import Tokenizer
    except ImportError as e:  # text needs the tokenizers package; ids do not
        raise ImportError(f"reading {file} needs the 'tokenizers' package "
                          "(pip install tokenizers)") from e
    return Tokenizer.from_file(file)


def load_generator(path: "str | os.PathLike[str]", device: Any = None,
                   cuda_graph: bool | None = None, *, max_cache_len: int | None = None,
                   eos_token_ids: Seq[int] | None = None, tokenizer: Any = "auto") -> LanguageModel:
    """Loads a generation package: one made by ``python -m aotrt_tools.llm export``, or a
    decoder step exported by torch's own flow (Hugging Face's TorchExportableModuleForDecoderOnlyLM
    and ``aoti_compile_and_package``), for which max_cache_len and eos_token_ids may have to be
    given. tokenizer: "auto" (NAME.tokenizer.json beside the package, if any), a path, a
    ``tokenizers.Tokenizer``, or None."""
    path = os.fspath(path)
    gen = _aotrt.load_generator(path, device, cuda_graph, max_cache_len,
                                None if eos_token_ids is None else [int(t) for t in eos_token_ids])
    tok = _find_tokenizer(path, None if tokenizer == "auto" else tokenizer)
    return LanguageModel(gen, path, tok)


def load_program(path: "str | os.PathLike[str]", device: Any = None,
                 cuda_graph: bool | None = None, *, graphs: Seq[str] | None = None,
                 check_inputs: bool = True) -> "_aotrt.Program":
    """Loads every graph of a package (or ``graphs``) over one copy of the weights; its
    sessions (``Program.new_session()``) each own the state the graphs write."""
    return _aotrt.load_program(os.fspath(path), device, cuda_graph,
                               None if graphs is None else list(graphs), check_inputs)
