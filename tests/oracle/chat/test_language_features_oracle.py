"""Oracle test for the language itself: small templates exercising filters,
tests, methods, operators, scoping and whitespace control, each rendered by
aphrodited's interpreter and by jinja2 (HF configuration); output, or the
error message when jinja2 raises, must match."""

import json
import os
import subprocess

import pytest

from test_chat_template_oracle import FIXED_DATE, TOOL, hf_environment

CONTEXT = {
    "messages": [
        {"role": "system", "content": "  Be brief.  "},
        {"role": "user", "content": "Grüße, 日本 😀 \"q\" 'x'"},
        {"role": "assistant", "content": "ok", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [1.5, None, True]}}}]},
    ],
    "n": 7, "f": 2.5, "s": "Hello World", "empty": "", "nothing": None,
    "d": {"b": 2, "a": 1, "C": 3}, "l": [3, 1, 2], "words": ["b", "A", "c", "a"],
}

SNIPPETS = [
    # printing and Python repr
    "{{ d }}|{{ l }}|{{ (1, 'a') }}|{{ (1,) }}|{{ nothing }}|{{ true }}|{{ 1.0 }}|{{ 3.0 * 2 }}|{{ 1e20 }}|{{ 1/3 }}",
    "{{ messages[2] }}",
    "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\t', 'nl\\n', 'é'] }}",
    # arithmetic
    "{{ n // 2 }} {{ -n // 2 }} {{ n % 3 }} {{ -n % 3 }} {{ n / 2 }} {{ 2 ** 8 }} {{ f * 2 }} {{ n - f }} {{ -f }}",
    "{{ 'ab' * 2 }} {{ [1] * 3 }} {{ l + [4] }} {{ s ~ n ~ nothing }} {{ 10 % 4.5 }} {{ 7.5 // 2 }}",
    # comparisons, logic, conditional expressions
    "{{ 1 < n < 10 }} {{ n == 7.0 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ s and n }} {{ empty or 'x' }} {{ not l }}",
    "{{ 'y' if n > 5 else 'n' }} {{ 'a' in s }} {{ 'H' in s }} {{ 3 in l }} {{ 'b' in d }} {{ 'z' not in d }}",
    # tests
    "{% for v in [1, 1.5, 'x', none, true, [1], {'a': 1}, d.missing] %}"
    "{{ v is defined }}{{ v is none }}{{ v is string }}{{ v is number }}{{ v is integer }}{{ v is float }}"
    "{{ v is boolean }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }};{% endfor %}",
    "{{ 4 is even }}{{ 3 is odd }}{{ 9 is divisibleby(3) }}{{ 'ab' is lower }}{{ 'AB' is upper }}"
    "{{ none is sameas none }}{{ 1 is eq 1 }}{{ 1 is ne 2 }}{{ 2 is gt 1 }}{{ 'a' is in 'abc' }}{{ true is true }}",
    # string filters
    "{{ s|upper }}|{{ s|lower }}|{{ 'hello big-world (x)'|title }}|{{ 'hELLO'|capitalize }}|{{ '  x  '|trim }}|"
    "{{ 'xxhixx'|trim('x') }}|{{ s|replace('o', '0') }}|{{ s|replace('o', '0', 1) }}|{{ s|length }}|{{ s|wordcount }}",
    "{{ s|center(21) }}|{{ s|truncate(9) }}|{{ 'a very long sentence here'|truncate(12, true) }}|{{ '<a href=\"x\">'|e }}",
    "{{ 'line1\\nline2\\n\\nline4'|indent }}|{{ 'a\\nb'|indent(2, first=true) }}|{{ 'a\\n\\nb'|indent('--', blank=true) }}",
    "{{ '%s is %d years, %.2f%%'|format('Ann', 30, 99.5) }}|{{ '%(a)s-%(b)r'|format(a=1, b='x') }}|{{ '%5s|%-5s|%03d'|format('a', 'b', 7) }}",
    # sequence filters
    "{{ l|sort }} {{ l|sort(reverse=true) }} {{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ l|first }} {{ l|last }}",
    "{{ words|unique|list }} {{ l|reverse|list }} {{ l|max }} {{ l|min }} {{ words|max }} {{ l|sum }} {{ l|sum(start=10) }}",
    "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value', reverse=true) }} {{ d|items|list }} {{ d|list }}",
    "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 0)|list }} {{ l|join('-') }} {{ messages|join(',', attribute='role') }}",
    "{{ messages|map(attribute='role')|list }} {{ messages|selectattr('role', 'equalto', 'user')|list|length }}"
    " {{ messages|rejectattr('tool_calls', 'defined')|map(attribute='role')|join }} {{ l|select('odd')|list }}"
    " {{ [0, 1, '', 'a', none]|select|list }} {{ [0, 1, '', 'a', none]|reject|list }} {{ words|map('upper')|list }}",
    "{{ messages|map(attribute='name', default='anon')|list }} {{ messages|selectattr('tool_calls')|map(attribute='role')|first }}",
    "{{ messages[2].tool_calls[0].function.arguments|tojson }}|{{ d|tojson(indent=2) }}|{{ l|tojson(separators=(',', ':')) }}"
    "|{{ d|tojson(sort_keys=true) }}|{{ messages[1].content|tojson }}|{{ messages[1].content|tojson(ensure_ascii=true) }}",
    "{{ '42'|int }} {{ '3.9'|int }} {{ 'x'|int(-1) }} {{ 3.9|int }} {{ true|int }} {{ '2.5'|float }} {{ 'x'|float }}"
    " {{ -3|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.345|round(2) }} {{ 2.7|round(0, 'floor') }} {{ 7|round }}",
    "{{ missing|default('d') }} {{ empty|default('d') }} {{ empty|default('d', true) }} {{ nothing|default('d') }} {{ missing|d }}",
    "{{ n|string ~ s|list|length|string }} {{ l|list }} {{ 'abc'|list }} {{ messages|length }} {{ d|count }}",
    # methods
    "{{ s.split() }} {{ s.split('o') }} {{ s.split('o', 1) }} {{ s.rsplit('o', 1) }} {{ '  a  '.strip() }}|{{ '  a  '.lstrip() }}|{{ '  a  '.rstrip() }}",
    "{{ s.startswith('He') }} {{ s.endswith('ld') }} {{ s.startswith(('x', 'H')) }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.count('l') }}",
    "{{ s.upper() }} {{ s.lower() }} {{ 'ab cd'.title() }} {{ 'aB'.capitalize() }} {{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }}",
    "{{ '{} and {}'.format(1, 2) }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{x:>5}|{y:.2f}|{z!r}'.format(x='r', y=3.14159, z='q') }}",
    "{{ ', '.join(words) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ s.lstrip('H') }}",
    "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 0) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}",
    "{{ l.index(1) }} {{ l.count(3) }} {{ messages[0].content.strip() }} {{ messages[1]['role'] }} {{ messages[-1].role }}",
    # slicing
    "{{ s[1:4] }} {{ s[-5:] }} {{ s[::2] }} {{ s[::-1] }} {{ l[1:] }} {{ l[:-1] }} {{ messages[1].content[:6] }} {{ s[100:] }}",
    # statements and scoping
    "{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
    "{% set ns = namespace(a=0, b=[]) %}{% for m in messages %}{% set ns.a = ns.a + 1 %}{% endfor %}{{ ns.a }}{{ ns.b }}",
    "{% for m in messages %}{{ loop.index }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}"
    "{{ loop.cycle('x', 'y') }}{{ loop.previtem.role if loop.previtem is defined }};{% endfor %}",
    "{% for i in range(10) if i is odd %}{% if i > 6 %}{% break %}{% endif %}{% if i == 3 %}{% continue %}{% endif %}"
    "{{ i }}{{ loop.length }},{% else %}none{% endfor %}|{% for i in [] %}x{% else %}empty{% endfor %}",
    "{% macro m(a, b='B', c=none) %}[{{ a }}{{ b }}{{ c }}{{ varargs }}{{ kwargs }}]{% endmacro %}"
    "{{ m(1) }}{{ m(1, 2, 3) }}{{ m(1, c=4) }}{{ m(1, 2, 3, 4, z=5) }}",
    "{% macro outer() %}<{{ caller('x') }}>{% endmacro %}{% call(v) outer() %}got {{ v }}{% endcall %}",
    "{% set t %}  captured {{ n }}  {% endset %}[{{ t }}]{% set u | trim | upper %}  low  {% endset %}[{{ u }}]",
    "{% filter upper %}shout {{ s }}{% endfilter %}{% with a = 1 %}{{ a }}{% endwith %}{{ a }}",
    "{% set a, b = 'xy' %}{{ b }}{{ a }}{% for k, v in d|dictsort %}{{ k }}{{ v }}{% endfor %}",
    # whitespace control
    "a\n  {% if true %}\n  b\n  {% endif %}\n  c\n{%- if true -%}  d  {%- endif -%}\n  e {{- ' f ' -}} g\n",
    "{%+ if true %}x{% endif +%}\n{# comment #}\n  {#- c2 -#}  y{% raw %} {{ raw }} {% endraw %}\n",
    "  {{ 'a' }}\n  {% for i in l %}\n    {{ i }}\n  {% endfor %}\n",
    # globals
    "{{ range(5)|list }} {{ range(2, 10, 3)|list }} {{ dict(a=1, b=2) }} {{ namespace(x=1).x }} {{ strftime_now('%Y-%m-%d %A %B') }}",
    # errors jinja2 raises
    "{{ raise_exception('custom failure: ' ~ n) }}",
    "{{ s + n }}",
    "{{ n + s }}",
    "{{ missing.attr }}",
    "{{ d.missing.attr }}",
    "{{ l.append(4) }}",
    "{{ d.update({}) }}",
    "{{ 1 / 0 }}",
    "{{ messages|tojson }}{{ missing|tojson }}",
    "{{ range(100001)|length }}",
    "{{ n|length }}",
    "{{ l|select|tojson }}",
    "{% set n.x = 1 %}",
    "{{ [].pop() }}",
    "{{ '%d' % 'x' }}",
]


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    work = tmp_path_factory.mktemp("snippets")
    cases = []
    for i, src in enumerate(SNIPPETS):
        path = work / f"snippet{i}.jinja"
        path.write_text(src, encoding="utf-8")
        cases.append({"template": str(path), "context": CONTEXT})
    cases_path = work / "cases.json"
    cases_path.write_text(json.dumps(cases), encoding="utf-8")
    proc = subprocess.run([str(TOOL), "--batch", str(cases_path)], capture_output=True,
                          env=dict(os.environ, APH_FIXED_DATE=FIXED_DATE), timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads(proc.stdout.decode("utf-8"))


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_snippet_matches_jinja2(ours, index):
    src = SNIPPETS[index]
    try:
        expected, ok = hf_environment().from_string(src).render(**CONTEXT), True
    except Exception as e:
        expected, ok = str(e), False
    got = ours[index]
    if ok:
        assert got["ok"], f"{src!r}: jinja2 rendered {expected!r}, we failed: {got.get('error')}"
        assert got["output"] == expected, src
    else:
        assert not got["ok"], f"{src!r}: jinja2 raised {expected!r}, we rendered {got['output']!r}"
        assert got["error"].endswith(expected), f"{src!r}: ours {got['error']!r}, jinja2 {expected!r}"
