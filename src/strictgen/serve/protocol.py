"""Request bodies of the dialects the server speaks, as pydantic models.

Unknown fields are kept (extra="allow") so clients that send more than we use still work; fields we
do use are typed, so a wrong type is a 400 naming the field, not a crash later on.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ChatMessage(_Open):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[Any] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class _Sampling(_Open):
    model: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=-1)
    seed: int | None = None
    stop: str | list[str] | None = None
    n: int = Field(default=1, ge=1, le=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    # vLLM extras
    guided_json: dict[str, Any] | bool | str | None = None
    guided_regex: str | None = None
    guided_choice: list[str] | None = None
    guided_grammar: str | None = None
    structured_outputs: dict[str, Any] | None = None
    format_hint: bool = True  # strictgen: describe a JSON Schema format in the system turn (docs/serve.md)


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    # vLLM's name: at most this many tokens in the reasoning block, then its close is forced (-1: no bound)
    thinking_token_budget: int | None = Field(default=None, ge=-1)


class CompletionRequest(_Sampling):
    prompt: str | list[str]
    echo: bool = False


class ResponsesRequest(_Open):
    model: str | None = None
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    text: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    stream: bool = False
    format_hint: bool = True  # as in chat completions


class LlamaCppCompletionRequest(_Open):
    prompt: str
    n_predict: int | None = Field(default=None, ge=-1)
    grammar: str | None = None
    json_schema: dict[str, Any] | None = None
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    seed: int | None = None
    stop: list[str] | None = None
    stream: bool = False


class OllamaOptions(_Open):
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: int | None = Field(default=None, ge=0)
    seed: int | None = None
    num_predict: int | None = None
    stop: list[str] | None = None


class OllamaChatRequest(_Open):
    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    format: str | dict[str, Any] | None = None
    options: OllamaOptions | None = None
    stream: bool = True
    tools: list[dict[str, Any]] | None = None


class OllamaGenerateRequest(_Open):
    model: str | None = None
    prompt: str
    system: str | None = None
    raw: bool = False
    format: str | dict[str, Any] | None = None
    options: OllamaOptions | None = None
    stream: bool = True
