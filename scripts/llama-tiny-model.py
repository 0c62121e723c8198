"""Writes a tiny llama-architecture GGUF model for tests: random weights around a real tokenizer.

Usage: PYTHONPATH=<llama.cpp>/gguf-py python3 llama-tiny-model.py <vocab.gguf> <out.gguf>

The tokenizer (its tokens, scores, types and special ids) is copied from one of llama.cpp's vocabulary
files (models/ggml-vocab-*.gguf); the weights are seeded noise, so the text is noise but every protocol
path (chat template, tools, grammars, embeddings, tokenize) is the engine's own. The chat template is
ChatML with Hermes-style <tool_call> blocks, which llama.cpp's server recognises as a tool-calling format.
Byte tokens are never sampled (see main). Known limit: llama.cpp (this build) starts a json_schema grammar with the generation prompt's text, and on this
model every json_schema request is refused (400, "Failed to initialize samplers: std::exception"), also with
<|im_start|> and <|im_end|> as control tokens; with an empty generation prompt json_schema works, but the
server's output parser then fails on some noise (a 500, "does not match the expected peg-native format").
"""

import sys

import gguf
import numpy as np

CHAT_TEMPLATE = """{%- if tools %}<|im_start|>system
{%- if messages[0].role == 'system' %}
{{ messages[0].content }}
{%- endif %}
You may call one or more functions. Function signatures are within <tools></tools>:
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
For each call, reply with <tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}
{%- if not (loop.first and message.role == 'system') %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- elif message.role == 'assistant' %}<|im_start|>assistant
{%- if message.content %}
{{ message.content }}
{%- endif %}
{%- for tool_call in message.tool_calls %}
<tool_call>
{"name": "{{ tool_call.function.name }}", "arguments": {{ tool_call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

EMBED, LAYERS, HEADS, FEED_FORWARD, CONTEXT = 64, 2, 4, 128, 4096
TOKENIZER_KEYS = ("tokenizer.ggml.",)
BYTE_TOKEN = 6  # llama.cpp's LLAMA_TOKEN_TYPE_BYTE


def main(vocab_path: str, out_path: str) -> None:
    reader = gguf.GGUFReader(vocab_path)
    vocab_size = len(reader.fields["tokenizer.ggml.tokens"].data)
    writer = gguf.GGUFWriter(out_path, "llama")
    writer.add_name("tollgate-tiny")
    writer.add_block_count(LAYERS)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBED)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(EMBED // HEADS)
    writer.add_vocab_size(vocab_size)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for name, field in reader.fields.items():
        if not name.startswith(TOKENIZER_KEYS):
            continue
        value_type = field.types[0]
        if value_type == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, field.contents(), value_type, field.types[-1])
        else:
            writer.add_key_value(name, field.contents(), value_type)
    writer.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(51)

    def noise(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    # Noise would pick byte tokens (<0x..>) too, whose pieces of characters make invalid UTF-8, which llama.cpp's
    # chat output parser refuses (a 500, "does not match the expected peg-native format", on some answers).
    # So every token's embedding carries one large constant dimension, which stays the largest in the last
    # hidden state, and the byte tokens' output rows weigh it strongly negative: they are never sampled.
    token_embd = noise(vocab_size, EMBED)
    token_embd[:, 0] = 1.0
    output = noise(vocab_size, EMBED)
    token_types = reader.fields["tokenizer.ggml.token_type"].contents()
    output[[i for i, kind in enumerate(token_types) if kind == BYTE_TOKEN], 0] = -20.0
    writer.add_tensor("token_embd.weight", token_embd)
    writer.add_tensor("output_norm.weight", np.ones(EMBED, dtype=np.float32))
    writer.add_tensor("output.weight", output)
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(EMBED, dtype=np.float32))
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{part}.weight", noise(EMBED, EMBED))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(EMBED, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", noise(FEED_FORWARD, EMBED))
        writer.add_tensor(f"{block}.ffn_up.weight", noise(FEED_FORWARD, EMBED))
        writer.add_tensor(f"{block}.ffn_down.weight", noise(EMBED, FEED_FORWARD))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
