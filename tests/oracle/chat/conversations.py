"""Conversations every fixture chat template is rendered with, on both sides
of the oracle. Each is the keyword arguments HF's apply_chat_template passes
to template.render(): messages, tools, documents, add_generation_prompt and
the special tokens."""

import copy

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
                "days": {"type": "integer", "description": "Forecast days", "minimum": 1, "maximum": 7},
            },
            "required": ["city"],
        },
    },
}

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "web_search",
        "description": "Search the web and return the top results.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "max_results": {"type": "number", "description": "At most this many", "default": 3.5},
                "safe": {"type": "boolean", "description": "Filter adult content"},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Optional tags"},
            },
            "required": ["query"],
        },
    },
}

TOOLS = [WEATHER_TOOL, SEARCH_TOOL]


def _tool_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _base(messages, add_generation_prompt, tools=None, **extra):
    ctx = {"messages": messages, "tools": tools, "documents": None,
           "add_generation_prompt": add_generation_prompt}
    ctx.update(SPECIAL_TOKENS)
    ctx.update(extra)
    return ctx


SYSTEM = {"role": "system", "content": "You are a concise assistant."}
USER_1 = {"role": "user", "content": "What is the capital of France?"}
ASSISTANT_1 = {"role": "assistant", "content": "The capital of France is Paris."}
USER_2 = {"role": "user", "content": "And its population?\nAnswer in one line."}

TOOL_TURN = [
    {"role": "user", "content": "What's the weather in Paris, and find news about it?"},
    {"role": "assistant", "content": "",
     "tool_calls": [_tool_call("call_1", "get_weather", {"city": "Paris", "unit": "celsius"}),
                    _tool_call("call_2", "web_search", {"query": "Paris news", "safe": True})]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"clear\"}"},
    {"role": "tool", "tool_call_id": "call_2", "name": "web_search", "content": "1. Paris hosts a marathon."},
    {"role": "assistant", "content": "It is 21°C and clear in Paris; a marathon is on."},
    {"role": "user", "content": "Thanks!"},
]


def conversations():
    """name -> render() keyword arguments."""
    c = {}
    c["system_user"] = _base([SYSTEM, USER_1], True)
    c["user_only"] = _base([USER_1], True)
    c["user_only_no_prompt"] = _base([USER_1], False)
    c["multi_turn"] = _base([SYSTEM, USER_1, ASSISTANT_1, USER_2], True)
    c["multi_turn_no_prompt"] = _base([USER_1, ASSISTANT_1, USER_2], False)
    c["assistant_prefill"] = _base([SYSTEM, USER_1, {"role": "assistant", "content": "The capital is"}], False)
    c["ended_with_assistant"] = _base([USER_1, ASSISTANT_1], False)
    c["tools_offered"] = _base([SYSTEM, {"role": "user", "content": "Weather in Oslo?"}], True, tools=TOOLS)
    c["tools_no_system"] = _base([{"role": "user", "content": "Weather in Oslo?"}], True, tools=[WEATHER_TOOL])
    c["tool_calls"] = _base(copy.deepcopy(TOOL_TURN), True, tools=TOOLS)
    string_args = copy.deepcopy(TOOL_TURN)
    for call in string_args[1]["tool_calls"]:
        import json
        call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    c["tool_calls_string_arguments"] = _base(string_args, True, tools=TOOLS)
    c["tool_call_pending"] = _base(copy.deepcopy(TOOL_TURN[:3]), True, tools=TOOLS)
    c["content_parts"] = _base([SYSTEM, {"role": "user", "content": [
        {"type": "text", "text": "Describe this in two words."},
        {"type": "text", "text": "Be brief."}]}], True)
    c["unicode_and_quotes"] = _base([
        {"role": "user", "content": "Grüße aus Köln — 日本語 😀 \"quoted\" and 'single' \\ backslash\ttab"},
        {"role": "assistant", "content": "  Leading and trailing spaces  "},
        {"role": "user", "content": "<b>html</b> & {{ not a tag }} {% neither %}"}], True)
    c["reasoning"] = _base([
        USER_1,
        {"role": "assistant", "content": "Paris.", "reasoning_content": "The user asks a geography question."},
        {"role": "user", "content": "Why?"},
        {"role": "assistant", "content": "<think>\nIt is the seat of government.\n</think>\n\nBecause it is the capital."},
        USER_2], True, enable_thinking=True)
    c["no_thinking"] = _base([USER_1], True, enable_thinking=False)
    c["empty_system"] = _base([{"role": "system", "content": ""}, USER_1], True)
    c["unknown_role"] = _base([{"role": "narrator", "content": "Once upon a time."}, USER_1], True)
    c["assistant_first"] = _base([ASSISTANT_1, USER_1], True)
    c["no_messages"] = _base([], True)
    return c
