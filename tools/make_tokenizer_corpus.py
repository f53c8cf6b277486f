#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/corpus.txt: the texts the tokenizer parity tests run.

Every line is one text. Inside a line, the escapes \\n, \\r, \\t and \\\\ stand for a
newline, carriage return, tab and backslash, so texts can hold line breaks. The text is
our own: hand-written fragments combined at random with a fixed seed, so rerunning this
script reproduces the file byte for byte.

    python3 tools/make_tokenizer_corpus.py [--out PATH] [--lines N]
"""
import argparse
import pathlib
import random

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "A paged KV cache keeps every sequence's keys in fixed-size blocks.",
    "Decode is bound by memory bandwidth, not by arithmetic.",
    "Batching turns many matrix-vector products into one matrix-matrix product.",
    "She said, \"It's fine,\" but he'd already left; they'll call back later.",
    "I'm sure you've seen it: we're done, aren't we?",
    "Prices rose 3.5% in 2023, from $1,299.99 to $1,345.50.",
    "Call +1 (555) 012-3456 before 9:30am on 2024-07-15.",
    "e-mail: someone@example.com, web: https://example.org/path?q=1&lang=en#top",
    "Tokenizers split text into pieces; models only ever see the pieces.",
    "UPPER CASE and lower case and MiXeD CaSe words.",
    "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "Hello world", "hello", " leading space", "trailing space ", "  two leading spaces",
    "a", "I", "ok.", "...", "?!", "--", "1", "12", "123", "1234", "12345678901234567890",
    "3.14159 2.71828 1.41421", "0x7fff 0b1010 1e-9 6.02e23",
    "Mr. O'Neil's cat's toy isn't here.", "rock'n'roll", "'quoted' and \"double\"",
]
CHINESE = [
    "今天天气很好，我们去公园散步吧。", "机器学习模型需要大量的数据进行训练。",
    "分词器把文本切成小块。", "你好，世界！", "北京是中国的首都。",
    "这个问题的答案是四十二。", "请把文件发给我，谢谢。", "深度学习与自然语言处理",
]
JAPANESE = [
    "こんにちは、世界！", "今日はとても暑いですね。", "東京タワーに行きました。",
    "カタカナとひらがなと漢字が混ざった文章です。", "ありがとうございます。",
    "ｶﾀｶﾅ（半角）とＡＢＣ（全角）", "吾輩は猫である。名前はまだ無い。",
]
OTHER_SCRIPTS = [
    "안녕하세요, 반갑습니다.", "Привет, как дела? Всё хорошо.", "Γειά σου κόσμε",
    "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Xin chào thế giới",
    "Ça va? Où est la bibliothèque? Très bien, merci.", "Grüße aus München, schöne Straße!",
    "¿Dónde está el baño? ¡Aquí!", "Zażółć gęślą jaźń", "Ünïcödé àccénts: naïve café résumé",
    "ﬁ ﬂ ligatures and ẞ and İstanbul", "ǅ ǈ ǋ titlecase digraphs", "Ωμέγα and Ελληνικά",
]
EMOJI = [
    "😀", "👍🏽", "❤️", "🇺🇸🇯🇵", "👨‍👩‍👧‍👦", "🤖 robots 🚀 rockets", "I ❤ tokens ✨",
    "🎉🎉🎉", "☕️ and 🍰", "➡️ ⬅️ ⬆️", "©®™", "½ ¼ ¾ ∞ ≠ ≤ ≥ ± × ÷", "→ ← ↑ ↓ ⇒",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙", "𠀀𠀁𪜀 rare ideographs", "\u2581 lower one eighth block", "\u00a0nbsp\u00a0",
    "zero\u200bwidth", "tab\u3000ideographic space",
]
CODE = [
    "def add(a, b):\\n    return a + b",
    "for (int i = 0; i < n; ++i) { sum += x[i] * y[i]; }",
    "#include <stdio.h>\\nint main(void) {\\n\\tprintf(\"hi\\\\n\");\\n\\treturn 0;\\n}",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "const f = (x) => x ** 2; // square",
    "if x != None and len(xs) > 0:\\n        print(xs[-1])",
    "<div class=\"box\"><p>Hello</p></div>",
    "<table><tr><td>1</td><td>2</td></tr></table>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
    "x = y if a else b  # comment",
    "fn main() { let v: Vec<u32> = (0..10).collect(); }",
    "$ ls -la /usr/local/bin | grep -v '^d' > out.txt 2>&1",
    "    indented four", "\\tindented tab", "\\t\\tdouble tab", "        eight spaces",
    "a\\\\b\\\\c windows\\\\path", "regex: ^[a-z]+\\\\d{2,3}$",
    "```python\\nprint('fenced')\\n```", "- [ ] todo\\n- [x] done", "# Heading\\n\\n## Sub",
]
SPECIAL = [
    "<start_of_turn>user\\nHello!<end_of_turn>\\n<start_of_turn>model\\n",
    "<start_of_turn>user\\nWhat is 2+2?<end_of_turn>\\n<start_of_turn>model\\n4<end_of_turn>\\n",
    "<bos><start_of_turn>user\\nhi<end_of_turn>", "<eos>", "<bos>", "<pad>", "<unk>", "<mask>",
    "text<eos>more text", "<bos>hello", "[multimodal]", "<start_of_image>", "<end_of_image>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\\n\\nHi<|eot_id|>",
    "<|im_start|>system\\nYou are helpful.<|im_end|>\\n<|im_start|>user\\nhi<|im_end|>",
    "<unused0><unused1>", "<start_of_turn>", "<end_of_turn>", "< start_of_turn >",
    "<start_of_turn >user", "<<start_of_turn>>", "<end_of_turn><end_of_turn>",
    "<s>[INST] hello [/INST]</s>", "<|endoftext|>", "<|eot_id|> trailing",
]
WHITESPACE = [
    " ", "  ", "   ", "    ", "\\n", "\\n\\n", "\\n\\n\\n", "\\t", "\\t\\t", " \\n ", "\\r\\n",
    "\\n \\n", "a\\nb", "a\\n\\nb", "a \\n b", "a  b", "a   b", "a    b", "a\\tb", "a \\t b",
    "end.\\n", "\\nstart", "  \\n  \\n  ", "x                                x",
    "\\n\\n\\n\\n\\n\\n\\n\\n", "word\\r\\nword\\r\\n", " \\t\\n\\r ",
]
GROUPS = [ENGLISH, CHINESE, JAPANESE, OTHER_SCRIPTS, EMOJI, CODE, SPECIAL, WHITESPACE]
SEPARATORS = [" ", "", "\\n", "  ", "\\n\\n", "\\t", " \\n", ", ", "。", "...", "\\n    "]


def escape_plain(text: str) -> str:
    """Escapes a literal Python string for the corpus format."""
    return (text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
            .replace("\t", "\\t"))


def make_lines(n_lines: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    # Every fragment once on its own line, then random mixtures.
    lines = [f for group in GROUPS for f in group]
    while len(lines) < n_lines:
        n_parts = rng.choice([1, 2, 2, 3, 3, 4, 5])
        parts = []
        for _ in range(n_parts):
            parts.append(rng.choice(rng.choice(GROUPS)))
            parts.append(rng.choice(SEPARATORS))
        line = "".join(parts[:-1])
        roll = rng.random()
        if roll < 0.08:
            line = " " * rng.randint(1, 6) + line
        elif roll < 0.16:
            line = line + " " * rng.randint(1, 6)
        elif roll < 0.20:
            line = line.upper()
        elif roll < 0.24:
            word = rng.choice(ENGLISH).split(" ")[0]
            line = (word + rng.choice([" ", "", "\\n"])) * rng.randint(2, 12)
        lines.append(line)
    return lines[:n_lines]


def main() -> None:
    root = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(root / "tests/fixtures/tokenizer/corpus.txt"))
    parser.add_argument("--lines", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()
    lines = make_lines(args.lines, args.seed)
    for line in lines:
        assert "\n" not in line and "\r" not in line, line
    pathlib.Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} lines to {args.out}")


if __name__ == "__main__":
    main()
