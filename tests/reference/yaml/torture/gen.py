"""Writes the torture documents of tests/reference/yaml/torture: python3 gen.py DIR.

Inputs only; the .yaml outputs come from the Go program in ../README.md.
Deterministic (no randomness): running it again gives the same files.
"""
import json, os, re, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)

def dump(name, obj):
    with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
        # Characters go-yaml refuses or reads as line breaks when raw are escaped
        # (raw-breaks.json and errors.json have them raw).
        text = json.dumps(obj, ensure_ascii=False, indent=1)
        f.write("".join("\\u%04x" % ord(c) if 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029\ufffe\uffff" else c for c in text))
        f.write("\n")

words = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
         "incididunt ut labore et dolore magna aliqua").split()
sentence = " ".join(words * 3)
strings = [
    # empty and spaces
    "", " ", "  ", " a", "a ", " a ", "a  b", "a   b",
    # indicators
    "- x", "-", "--", "---", "--- x", "---x", "...", "... x", "-x", "-1-",
    ": ", "a: b", "a:b", "a :b", ":a", ": a", "a:", "?", "? x", "?x", "a?b",
    "#", "# x", "a #b", "a#b", "a# b", "'", "''", "a'b", "'a", "\"", "a\"b", "\"a\"",
    "\\", "a\\b", "\\n", "<<", "=", "!x", "!", "&a", "*a", "%x", "@x", "`x", "a`",
    "|", "|x", ">", ">x", "[a]", "{a}", "a,b", "a[b]", "a{b}", "a}", "{", "}", "[", "]",
    ",", ",a", "a,", "a, b", "a ,b",
    # controls and unicode
    "\t", "a\tb", "\ta", "a\t", "\u0000", "a\u0001b", "\u001b[0m", "\u007f", "a\u0080b",
    "\u0085", "a\u0085b", "\u00a0", "a\u00a0", "é", "日本語", "😀", "a😀b", "x \U0001F680 y",
    "\u2028", "a\u2028b", "a \u2028b", "a\u2028 b", "\u2029", "a\u2029b", "\ufeff", "\ufeffabc def",
    "a\ufeff", "\ufffe", "\uffff", "\ue000", "\ud7ff", "\ufffd", "\u0009\u000b\u000c",
    # YAML 1.1 words
    "yes", "Yes", "YES", "yEs", "no", "No", "NO", "y", "Y", "n", "N", "on", "On", "ON", "oN",
    "off", "Off", "OFF", "true", "True", "TRUE", "tRue", "false", "False", "FALSE", "null",
    "Null", "NULL", "nULL", "~", "~x", "yes please", "o", "t", "f",
    # integers
    "0x1F", "0X1F", "0x", "0xg", "0o17", "0O17", "0o8", "0b101", "0B101", "0b-101", "0b+1",
    "0b2", "0b", "-0b101", "-0b-1", "0755", "0758", "09", "08", "0", "00", "-0", "+0", "1_000",
    "_1000", "1000_", "1__0", "+_1", "0_x_1_f", "+1", "-1", "+", "--1", "+-1",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "+9223372036854775808",
    "0x8000000000000000", "-0x8000000000000000", "0xFFFFFFFFFFFFFFFF", "0x10000000000000000",
    # floats
    "1e3", "1E3", "1e+3", "1e-3", "1e", "1e+", "e3", "1e400", "-1e400", "1.5e400", "1e-400",
    ".5", ".5e3", "._5", ".5_5", ".5_", ".5__5", ".e5", ".", "..", ".5.", ".5e_1", ".5e1_0",
    ".inf", ".Inf", ".INF", "+.inf", "-.Inf", "-.INF", ".iNf", ".nan", ".NaN", ".NAN", "nan",
    "NaN", "inf", "Inf", "Infinity", "-inf", "1.", "1.0", "-.5", "+.5", "1_2.3_4", "1.2.3",
    "1,5", "0.1", "1e1_0", "3.14", "6.02e23", "0x1p-2", ".5e400",
    # base 60
    "12:30", "1:2:3", "12:60", "12:59", "-12:30", "+1:2", "1:2.5", "1_0:20", "12:30:",
    "12:3a", "1:", ":30", "190:20:30.15", "12:30.5_5",
    # timestamps
    "2024-01-01", "2024-1-2", "2024-1-2T3:4:5Z", "2024-01-01T00:00:00Z", "2024-01-01t00:00:00Z",
    "2024-01-01T00:00:00z", "2024-01-01T00:00:00", "2024-01-01T00:00:00.123456789Z",
    "2024-01-01T00:00:00.1234567891234Z", "2024-01-01T00:00:00,5Z", "2024-01-01T00:00:00.Z",
    "2024-01-01T00:00:00+01:00", "2024-01-01T00:00:00-23:59", "2024-01-01T00:00:00+25:00",
    "2024-01-01T00:00:00+24:60", "2024-01-01T00:00:00+2400", "2024-01-01T00:00:00 +01:00",
    "2024-01-01 10:00:00", "2024-01-01   10:00:00", "2024-01-01 10:00:00Z", "2024-01-01 10:00:00.5",
    "2024-01-01 10:00", "2024-01-01 ", "2024-01-01T", "2024-13-01", "2024-00-10", "2024-02-30",
    "2024-02-29", "2023-02-29", "2000-02-29", "1900-02-29", "2024-1-32", "2024-01-00",
    "2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z", "2024-01-01T23:59:60Z", "2024-01-01T23:59:59Z",
    "20240-01-01", "2024-01", "2024-", "0000-01-01", "9999-12-31", "2024-001-01", "2024-01-011",
    "+2024-01-01", "2024-04-31", "2024-06-30",
    # multi-line
    "a\nb", "a\nb\n", "a\nb\n\n", "a\nb\n\n\n", "\n", "\n\n", "\na", "\n\na", " a\nb", "a \nb",
    "a\n b", "a\n\nb", "a\n \nb", "a\r\nb", "a\r\nb\r\n", "a\rb", "\r",
    "line1\nline2 with trailing space \nline3", "\ttab\nb", "a\n\tb", "a\n\u2028b", "a\u2028\nb",
    "x\u0085y\nz", "a\nb ", "a\n\u00e9\n😀", "- a\n- b", "key: value\nother: 2",
    "#!/bin/sh\necho hi\n", "  indented\n  block\n", "a\n\n\n", "\n\n\nb",
    # long
    "a" * 79, "a" * 80, "a" * 81, "a" * 200, "a" * 1500, "word " * 30, (("word " * 30) + "x"),
    sentence, sentence + "\n" + sentence, "  " + sentence, sentence + "  ",
    "x" * 78 + " y", "x" * 79 + " y", "x" * 80 + " y", "x" * 81 + "  y z", "x" * 81 + "   y",
    (" ".join(["ab"] * 60)), ("  ".join(["ab"] * 60)), ("   ".join(["abc"] * 50)),
    "- " + sentence, "yes " + sentence, "\t" + sentence, sentence + "\t" + sentence,
    sentence.replace(" ", "  "), "'" + sentence + "'", "\"" + sentence + "\"",
    ("é" * 100 + " ") * 3, ("😀" * 50 + " ") * 4, "\ufeff" + sentence,
    ("abc " * 40) + "\n" + ("def " * 40), "\n" + sentence, "x: " + sentence,
    ("a " * 600), (("lorem ipsum " * 120) + "\n") * 2, "#" + sentence, sentence + " #comment",
]
assert len(strings) == len(set(strings)), [s for s in strings if strings.count(s) > 1]

def deep(v):
    return {"l1": {"l2": {"l3": [{"l4": {"l5": v}}]}}}

dump("strings.json", {
    "items": strings,
    "values": {"v%03d" % i: s for i, s in enumerate(strings)},
    # Not the long ones (no simple keys) nor those with 19 or more digits in a row
    # (their order is not transitive, go-yaml's output would vary).
    # nor those that make cycles with others ("08" < "0O17" < "1e400" < "08").
    "keys": {s: i for i, s in enumerate(strings) if len(s) < 1000 and not re.search("[0-9]{19}", s)
             and s not in ("0755", "0758", "09", "08", "3.14", "6.02e23", "0x8000000000000000")},
    "deep": deep({"v%03d" % i: s for i, s in enumerate(strings)}),
    "deep_items": deep(strings),
})

# Numbers are written raw: json.dumps would re-format them.
numbers = ["0", "-0", "-0.0", "0.0", "1.0", "1.5", "-1.5", "1e21", "1e20", "1E21", "1e+21",
    "1e-7", "1e-5", "1e-4", "1e-3", "0.0001", "0.00001", "123456789012345678901234567890",
    "18446744073709551615", "18446744073709551616", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809", "0.1", "0.2", "0.30000000000000004",
    "100000.5", "1234567.0", "123456.0", "999999.0", "999999.9", "1000000.0", "1e6", "12345678",
    "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "4.9406564584124654e-324",
    "1e400", "-1e400", "1e-400", "-1e-400", "1e23", "9007199254740993", "4.35", "2.5e-5",
    "1E5", "3.0e2", "100", "1.23456789e-10", "-1.5e-10", "0e5", "0E-0", "-0e0",
    "123456789012345678", "1234567890123456789", "12345678901234567890", "0.000001", "0.0000001",
    "1.0000000000000002", "0.9999999999999999", "2.718281828459045", "1e100", "1.5e300", "8.5",
    "-100000000000000000000", "1264501582533417.25", "-34233668255422.8125", "1264501582533417.75",
    "4503599627370497.5", "9007199254740993", "36028797018963971", "1152921504606846976", "1.00000000000000000000000001", "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791.9999999999"]
body = ",\n".join(numbers)
with open(os.path.join(out, "numbers.json"), "w") as f:
    f.write('{"items": [\n' + body + '\n], "values": {\n' +
            ",\n".join('"n%03d": %s' % (i, n) for i, n in enumerate(numbers)) + '\n}}\n')

keys = ["a10", "a9", "a09", "a009", "A", "_x", "1", "10", "2", "02", "x-1", "x1", "x10", "x2",
        "é", "Z", "z", "ä", "b", "B", "a", "aa", "a1", "ab", "a_", "a-", "a.b", "a/b", "日本",
        "Ω", "ω", "٣", "x٣", "x3", "x²", "Ⅰ", "ª", "", " ", "-", "0", "00", "000", "01", "001",
        "9", "99", "100", "v1", "v1beta1", "v1alpha1", "v2", "v1beta2", "x9y", "x10y",
        "x09y", "a0", "a00", "metadata", "apiVersion", "kind", "spec", "status", "items",
        "f:metadata", "k:{\"name\":\"a\"}", "v:\"x\"", ".", "..", "f:spec", "1.10", "1.9",
        "1.09", "1.1", "z9", "z09", "z9z", "z10z", "Z10", "z10", "1234567890123456789",
        "a٣", "a3", "a٣3", "ab3", "ab03", "ab٣"]
assert len(keys) == len(set(keys))
dump("keys.json", {"map": {k: i for i, k in enumerate(keys)}, "reversed": {k: i for i, k in reversed(list(enumerate(keys)))}})

dump("structure.json", {
    "empty_map": {}, "empty_list": [], "null": None, "true": True, "false": False,
    "nested_empty": {"a": {}, "b": [], "c": [{}], "d": [[]], "e": [[], {}, None, [[]]], "f": {"g": {}}},
    "list_of_lists": [[1, 2], [[3, [4, []]]], [], [{"a": 1, "b": [1, [2]]}], [None], [[{}]]],
    "list_of_maps": [{"a": 1, "b": 2}, {}, {"c": {"d": [1, {"e": "f"}]}}, {"g": []}, {"h": {}}],
    "nulls": [None, None, {"a": None}, [None]],
    "map_of_lists": {"a": [1], "b": [[1]], "c": [{"x": [1, 2], "y": {"z": []}}]},
    "multiline_in_list": ["a\nb", ["c\nd\n"], {"e": "f\ng"}],
    "long_key_" + "k" * 120: {"a": 1},
    "k" * 129: "v",
    ("k" * 129) + "2": {"a": [1, 2], "b": {}},
    "key\nwith newline": "v",
    "key\nwith newline 2": {"a": 1},
    "key\nwith newline 3": [1, [2]],
    "key with newline at end\n": [],
    "é" * 43: "43 two-byte letters (86 bytes)",
    "é" * 64: "64 two-byte letters (128 bytes)",
    "é" * 65: "65 two-byte letters (130 bytes)",
    "x " * 70: "a long key with spaces: " + "y " * 50,
    "long key " * 20: {"nested": "value " * 30},
    "yes": "no", "": "", "~": None, "- a": "- b", "\t": "\t",
    "items": [{"metadata": {"name": "a", "labels": {"x": "1", "y": "yes"}}, "spec": {"containers": [{"name": "c", "args": ["-x", "--y=1", "z z"]}]}}],
})

# Scalars and collections as whole documents.
docs = {
    "root-string": "a\nb\n",
    "root-plain": "hello world",
    "root-quoted": "yes",
    "root-long": sentence,
    "root-empty-string": "",
    "root-null": None,
    "root-true": True,
    "root-empty-map": {},
    "root-empty-list": [],
    "root-list": [[1, [2, {"a": [3]}]], {"b": {}}, "c\nd"],
    "root-key-order": {"b": 1, "a": 2},
}
for name, v in docs.items():
    dump(name + ".json", v)
with open(os.path.join(out, "root-number.json"), "w") as f:
    f.write("1e3\n")
with open(os.path.join(out, "root-negative-zero.json"), "w") as f:
    f.write("-0\n")

# Raw (unescaped) characters go-yaml reads as line breaks, and the longest keys it accepts.
NEL, LS, PS = "\u0085", "\u2028", "\u2029"
raw = {
    "nel": "a" + NEL + "b",
    "nel_spaces": "a  " + NEL + "  b",
    "nel_nel": "a" + NEL + NEL + "b",
    "nel_three": "a" + NEL + " " + NEL + NEL + "b",
    "nel_start": NEL + "a",
    "nel_end": "a" + NEL,
    "nel_only": NEL,
    "ls": "a" + LS + "b",
    "ls_spaces": "a " + LS + " b",
    "ls_ps": "a" + LS + PS + "b",
    "ps_nel": "a" + PS + NEL + "b",
    "nel_ls": "a" + NEL + LS + "b",
    "nel_dashes": "a" + NEL + "---b",
    "nel_dots": "a" + NEL + " ... b",
    "escaped_and_raw": "a\\n" + NEL + "b",
    "k" * 1022: "a key whose ':' is 1024 characters after its opening quote",
    "é" * 1022: "the same in two-byte characters",
    "\\u00e9" * 170: "escapes count as the characters they are written with (1020 + quotes)",
}
with open(os.path.join(out, "raw-breaks.json"), "w", encoding="utf-8", newline="") as f:
    # json.dumps would escape the backslashes; write the keys and values as they are.
    f.write("{\n" + ",\n".join('"%s": "%s"' % (k, v) for k, v in raw.items()) + "\n}\n")

# Documents go-yaml fails to read; each must be an error.
errors = [
    '{"a":"\\/"}',
    '{"a":"\\ud83d\\ude00"}',
    '{"a":"\\ud800"}',
    '{"a":"x\u007fy"}',
    '{"a":"x\u0080y"}',
    '{"a":"x\u009fy"}',
    '{"a":"x\ufffey"}',
    '{"a":"x\uffffy"}',
    '{"k' + NEL + 'ey":1}',
    '{"k' + LS + 'ey":1}',
    '{"key"\n:1}',
    '{"' + "k" * 1023 + '":1}',
    '{"' + "k" * 1022 + '" :1}',
    '{"' + "é" * 1023 + '":1}',
    '{"a":"x' + NEL + '--- y"}',
    '{"a":"x' + NEL + '...' + NEL + 'y"}',
    '["x' + PS + '---' + LS + '"]',
    '\t{}',
    ' \t[]',
    '{}\r\t',
    '{}\n \t',
    '"a"\n\t',
]
with open(os.path.join(out, "errors.json"), "w", encoding="utf-8", newline="") as f:
    f.write(json.dumps(errors, ensure_ascii=True, indent=1) + "\n")
