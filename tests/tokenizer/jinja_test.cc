// Unit tests of the Jinja interpreter: expressions, statements, whitespace control and
// error messages. Expected strings are what Python's jinja2 3.1 renders with
// trim_blocks=True, lstrip_blocks=True.
#include <gtest/gtest.h>

#include <string>

#include "tokenizer/jinja_eval.h"

namespace tokenmill::tokenizer::jinja {
namespace {

std::string render(const std::string& source, const Dict& variables = {}) {
  return Template::parse(source).render(variables);
}

// The error message of parsing and rendering source, or "" when it succeeds.
std::string error_of(const std::string& source, const Dict& variables = {}) {
  try {
    render(source, variables);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JinjaLiterals, PrintLikePython) {
  EXPECT_EQ(render("{{ 1 }} {{ -2 }} {{ 1.0 }} {{ 2.5 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 1e-5 }}"),
            "1 -2 1.0 2.5 1e+20 0.30000000000000004 1e-05");
  EXPECT_EQ(render("{{ true }} {{ False }} {{ none }} {{ 'it\\'s' }} {{ \"a\\nb\" }}"), "True False None it's a\nb");
  EXPECT_EQ(render("{{ [1, 'a', none, true, [2]] }}"), "[1, 'a', None, True, [2]]");
  EXPECT_EQ(render("{{ {'a': 1, 'b': \"it's\"} }}"), "{'a': 1, 'b': \"it's\"}");
  EXPECT_EQ(render("{{ 'a' 'b' }}"), "ab");
  EXPECT_EQ(render("{{ undefined_variable }}"), "");
}

TEST(JinjaExpressions, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}"),
            "7 9 3.5 3 -4 1 2");
  EXPECT_EQ(render("{{ 2 ** 10 }} {{ 1.5 + 1 }} {{ 'ab' * 2 }} {{ [1] + [2] }} {{ 'a' + 'b' }}"), "1024 2.5 abab [1, 2] ab");
  EXPECT_EQ(render("{{ 'x' ~ 1 ~ none ~ 2.0 }}"), "x1None2.0");
  EXPECT_EQ(render("{{ '%s=%d' % ('a', 3) }}"), "a=3");
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"),
            "True False True True False True False");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1, 2] }}"),
            "True True True True");
  EXPECT_EQ(render("{{ 0 or 'x' }} {{ 1 and 'y' }} {{ not 0 }} {{ not 1 or 0 }} {{ none or [] }}"), "x y True 0 []");
  EXPECT_EQ(render("{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'x' if 0 }}]"), "yes no []");
}

TEST(JinjaExpressions, SubscriptsSlicesAttributes) {
  Dict vars{{"d", Value(Dict{{"k", Value("v")}, {"n", Value(Dict{{"x", Value(1)}})}})},
            {"l", Value(List{Value(1), Value(2), Value(3), Value(4)})}};
  EXPECT_EQ(render("{{ d.k }} {{ d['k'] }} {{ d.n.x }} {{ d['n']['x'] }} [{{ d.missing }}]", vars), "v v 1 1 []");
  EXPECT_EQ(render("{{ l[0] }} {{ l[-1] }} {{ l[1:3] }} {{ l[::-1] }} {{ l[::2] }} {{ l[:-1] }} {{ l[5:] }}", vars),
            "1 4 [2, 3] [4, 3, 2, 1] [1, 3] [1, 2, 3] []");
  EXPECT_EQ(render("{{ 'héllo'[1] }} {{ 'héllo'[::-1] }} {{ 'héllo'[1:3] }} {{ 'héllo' | length }}"), "é olléh él 5");
}

TEST(JinjaExpressions, Tests) {
  EXPECT_EQ(render("{{ x is defined }} {{ x is undefined }} {{ none is none }} {{ 'a' is string }} {{ 1 is number }}"),
            "False True True True True");
  EXPECT_EQ(render("{{ 1 is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ {} is mapping }} {{ [] is iterable }}"),
            "True True True True True");
  EXPECT_EQ(render("{{ 3 is odd }} {{ 3 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 1 is not none }}"),
            "True False True False True");
  EXPECT_EQ(render("{{ 1 is eq 1 }} {{ 'a' is in ['a'] }} {{ 2 is gt 1 }} {{ 'ab' is lower }} {{ true is sameas true }}"),
            "True True True True True");
}

TEST(JinjaFilters, StringFilters) {
  EXPECT_EQ(render("[{{ '  a b  ' | trim }}] {{ 'ab' | upper }} {{ 'AB' | lower }} {{ 'hello wORLD' | title }} {{ 'hELLO' | capitalize }}"),
            "[a b] AB ab Hello World Hello");
  EXPECT_EQ(render("{{ 'a-b-c' | replace('-', '+') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 42 | string ~ '!' }} {{ '12' | int + 1 }} {{ 'x' | int }} {{ 3.9 | int }}"),
            "a+b+c bba 42! 13 0 3");
  EXPECT_EQ(render("{{ 'héllo wörld' | upper }} {{ 'ПРИВЕТ' | lower }}"), "HÉLLO WÖRLD привет");
}

TEST(JinjaFilters, ContainerFilters) {
  Dict vars{{"people", Value(List{Value(Dict{{"name", Value("a")}, {"age", Value(3)}}),
                                  Value(Dict{{"name", Value("b")}, {"age", Value(5)}, {"vip", Value(true)}})})}};
  EXPECT_EQ(render("{{ [1, 2, 3] | length }} {{ [1, 2] | first }} {{ [1, 2] | last }} {{ ['a', 'b'] | join(', ') }} {{ 'ab' | list }}"),
            "3 1 2 a, b ['a', 'b']");
  EXPECT_EQ(render("{{ people | selectattr('vip') | map(attribute='name') | list }} "
                   "{{ people | rejectattr('vip') | map(attribute='name') | join }} "
                   "{{ people | selectattr('age', 'gt', 4) | list | length }} "
                   "{{ people | selectattr('name', 'equalto', 'a') | first }}",
                   vars),
            "['b'] a 1 {'name': 'a', 'age': 3}");
  EXPECT_EQ(render("{{ {'a': 1, 'b': 2} | items | list }} {{ [3, 1, 2] | sort }} {{ [1, 2] | reverse | list }} {{ [1, 1, 2] | unique | list }}"),
            "[['a', 1], ['b', 2]] [1, 2, 3] [2, 1] [1, 2]");
  EXPECT_EQ(render("{{ x | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | d('n') }}"),
            "d  d None");
}

TEST(JinjaFilters, ToJson) {
  Dict vars{{"v", Value(Dict{{"b", Value(1)}, {"a", Value(List{Value("x\"y"), Value(2.5), Value::none(), Value(true)})},
                             {"u", Value("日本")}, {"e", Value(Dict{})}})}};
  EXPECT_EQ(render("{{ v | tojson }}", vars), "{\"b\": 1, \"a\": [\"x\\\"y\", 2.5, null, true], \"u\": \"日本\", \"e\": {}}");
  EXPECT_EQ(render("{{ [1, {'k': 2}] | tojson(indent=2) }}"), "[\n  1,\n  {\n    \"k\": 2\n  }\n]");
}

TEST(JinjaMethods, StringAndDictMethods) {
  EXPECT_EQ(render("[{{ ' a '.strip() }}|{{ 'xax'.strip('x') }}|{{ ' a '.lstrip() }}|{{ ' a '.rstrip() }}]"), "[a|a|a | a]");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('x') }} {{ 'abc'.startswith(('x', 'a')) }}"), "True False True");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}"),
            "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c']");
  EXPECT_EQ(render("{{ 'ab'.upper() }} {{ 'AB'.lower() }} {{ 'hello world'.title() }} {{ 'aXa'.replace('a', 'b') }}"),
            "AB ab Hello World bXb");
  EXPECT_EQ(render("{% set d = {'a': 1, 'b': 2} %}{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }}"
                   "{% for k, v in d.items() %} {{ k }}={{ v }}{% endfor %}"),
            "['a', 'b'] [1, 2] 1 None 0 a=1 b=2");
}

TEST(JinjaMethods, StrFormatLikePython) {
  EXPECT_EQ(render("{{ 'x{}y{}'.format(1, none) }} {{ '{1}{0}'.format('a', 'b') }} {{ '{k}={{v}}'.format(k=True) }}"),
            "x1yNone ba True={v}");
  EXPECT_NE(error_of("{{ '{}{0}'.format(1) }}").find("cannot switch"), std::string::npos);
  EXPECT_NE(error_of("{{ '{'.format(1) }}").find("single '{'"), std::string::npos);
  EXPECT_NE(error_of("{{ '{}'.format() }}").find("no argument"), std::string::npos);
  // A format spec would change the text; it is refused, not ignored.
  EXPECT_NE(error_of("{{ '{:>3}'.format(1) }}").find("not supported"), std::string::npos);
  // Bounded as every string a template builds: 4,000 copies of 1 MB stop at 16 MiB.
  EXPECT_NE(error_of("{% set s = 'x' * 1000000 %}{{ ('{0}' * 4000).format(s) }}").find("MiB"), std::string::npos);
}

// jinja2's default Undefined (what HF renders with) prints as "", iterates as empty and is
// not "in" anything; select/map over none give nothing. Published templates rely on each.
TEST(JinjaExpressions, UndefinedAndNoneAsJinja2Treats) {
  EXPECT_EQ(render("[{{ missing | trim }}] [{{ 5 | trim }}]"), "[] [5]");
  EXPECT_EQ(render("{{ 'a' in missing }} {{ 'a' not in missing }}"), "False True");
  EXPECT_EQ(render("{{ none | selectattr('type', 'equalto', 'x') | list }} {{ none | map(attribute='x') | list }} "
                   "{{ none | reject | list }}"),
            "[] [] []");
}

TEST(JinjaErrors, UnknownFiltersInsideAnIfAreCheckedWhenEvaluated) {
  EXPECT_EQ(render("{% if false %}{{ x | from_json }}{% endif %}ok"), "ok");
  EXPECT_EQ(render("{{ 'trim' is filter }} {{ 'from_json' is filter }} {{ 'odd' is test }} {{ 'nope' is test }}"),
            "True False True False");
  EXPECT_EQ(error_of("{% if true %}\n{{ 'a' | from_json }}{% endif %}"), "line 2: unknown filter 'from_json'");
}

TEST(JinjaStatements, IfElifElse) {
  const char* t = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(t, {{"x", Value(1)}}), "one");
  EXPECT_EQ(render(t, {{"x", Value(2)}}), "two");
  EXPECT_EQ(render(t, {{"x", Value(3)}}), "many");
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(render("{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.length }}{{ 'F' if loop.first }}{{ 'L' if loop.last }}{{ x }} {% endfor %}"),
            "10323Fa 21213b 32103Lc ");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.length }} {% endfor %}"), "22 42 ");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}"), "3 7 ");
  EXPECT_EQ(render("{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}"), "xy");
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "023");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{{ loop.previtem }}{% endfor %}"), "ab1a2");
}

TEST(JinjaStatements, SetScopingAndNamespace) {
  // A plain set inside a loop does not outlive the iteration; a namespace attribute does.
  EXPECT_EQ(render("{% set x = 0 %}{% for i in [1, 2, 3] %}{% set x = x + i %}{{ x }},{% endfor %}{{ x }}"), "1,2,3,0");
  EXPECT_EQ(render("{% set ns = namespace(x=0) %}{% for i in [1, 2, 3] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"), "6");
  EXPECT_EQ(render("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set block %}in {{ 'side' }}{% endset %}[{{ block }}]"), "[in side]");
}

TEST(JinjaStatements, MacrosAndFilterBlocks) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', punct='?') }}"),
            "Hi a! Hi b?");
  EXPECT_EQ(render("{% filter upper %}shout {{ 'it' }}{% endfilter %}"), "SHOUT IT");
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
  EXPECT_EQ(render("a{% generation %}b{% endgeneration %}c"), "abc");
}

TEST(JinjaWhitespace, DashMarkers) {
  EXPECT_EQ(render("a  \n  {{- 'b' -}}  \n  c"), "abc");
  EXPECT_EQ(render("a \n {%- if true -%} \n b \n {%- endif -%} \n c"), "abc");
  EXPECT_EQ(render("a {#- comment -#} b"), "ab");
}

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\ny"), "  x\ny");
  EXPECT_EQ(render("{% for i in [1, 2] %}\n    {{ i }}\n{% endfor %}\n"), "    1\n    2\n");
  EXPECT_EQ(render("a {% if true %}b{% endif %}"), "a b");  // not at a line start: kept
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
  EXPECT_EQ(render("{# comment #}\nx"), "x");
  EXPECT_EQ(render("{{ 'v' }}\nx"), "v\nx");  // trim_blocks does not apply to }}
  EXPECT_EQ(render("x\n"), "x");  // one trailing newline is dropped
  EXPECT_EQ(render("x\n\n"), "x\n");
}

TEST(JinjaGlobals, RaiseExceptionAndRange) {
  EXPECT_EQ(render("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }}"), "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
  std::string e = error_of("line one\n{{ raise_exception('Roles must alternate') }}");
  EXPECT_EQ(e, "line 2: raise_exception: Roles must alternate");
}

TEST(JinjaErrors, NameTheConstructAndLine) {
  EXPECT_EQ(error_of("ok\n{{ x | frobnicate }}"), "line 2: unknown filter 'frobnicate'");
  EXPECT_EQ(error_of("{{ x is frobnicated }}"), "line 1: unknown test 'frobnicated'");
  EXPECT_EQ(error_of("\n\n{% include 'other.j2' %}"), "line 3: unknown or unsupported tag 'include'");
  EXPECT_EQ(error_of("{% endfor %}"), "line 1: unexpected tag 'endfor' (no matching opening tag)");
  EXPECT_EQ(error_of("{% if x %}\nunclosed"), "line 2: unexpected end of template: expected '{% elif %}' or '{% else %}' or '{% endif %}'");
  EXPECT_EQ(error_of("{{ 'unterminated }}"), "line 1: unterminated string literal");
  EXPECT_EQ(error_of("{{ x.y }}"), "line 1: 'x' is undefined (reading attribute 'y')");
  EXPECT_EQ(error_of("{{ nope() }}"), "line 1: 'nope' is undefined");
  EXPECT_EQ(error_of("{{ 1 + 'a' }}"), "line 1: unsupported operand types for +: 'int' and 'string'");
  EXPECT_EQ(error_of("{{ 1 / 0 }}"), "line 1: division by zero");
  EXPECT_EQ(error_of("{% set x = 1 %}{% set x.y = 2 %}"),
            "line 1: cannot assign attribute 'y' of 'x': only namespace() objects allow attribute assignment");
  EXPECT_EQ(error_of("{{ 1 +* 2 }}"), "line 1: unexpected '*' in expression");
  EXPECT_EQ(error_of("{{ a @ b }}"), "line 1: unexpected character '@' in tag");
}

TEST(JinjaErrors, HostileTemplatesAreBounded) {
  EXPECT_NE(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").find("nested too deeply"),
            std::string::npos);
  EXPECT_NE(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("nested more than 64 calls"), std::string::npos);
  EXPECT_NE(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
                .find("loop iterations"),
            std::string::npos);
}

// Each of these once crashed (an exception other than jinja::Error, undefined behaviour,
// or an allocation of all memory) and was found by tests/fuzz/chat_template_fuzzer.cc.
TEST(JinjaErrors, LiteralsAndArithmeticNeverOverflow) {
  EXPECT_NE(error_of("{{ 99999999999999999999 }}").find("integer literal '99999999999999999999' is out of range"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 1e999 }}").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("{{ [1][99999999999999999999] }}").find("out of range"), std::string::npos);
  EXPECT_NE(error_of("{{ 999999998000000001 * 999999999 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(error_of("{{ 9223372036854775807 + 1 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(error_of("{{ -9223372036854775807 - 2 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(error_of("{{ (-9223372036854775807 - 1) // -1 }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(error_of("{{ -(-9223372036854775807 - 1) }}").find("integer overflow"), std::string::npos);
  EXPECT_NE(error_of("{{ 2 ** 999999999999 }}").find("integer overflow"), std::string::npos);  // and at once
  EXPECT_EQ(render("{{ 3 ** 39 }} {{ (-2) ** 63 }} {{ 9223372036854775806 + 1 }}"),
            "4052555153018976267 -9223372036854775808 9223372036854775807");
  EXPECT_EQ(error_of("{{ [[1, 2]] | map(attribute='99999999999999999999') | list }}"), "");
}

// A namespace stored inside itself is a reference cycle: it must still be freed (the
// ASan run of these tests checks for leaks) and printing it must stop.
TEST(JinjaErrors, ANamespaceInsideItselfIsFreedAndNotPrintedForever) {
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{% set ns.l = [ns, 2] %}ok"), "ok");
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("nested more than"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns | tojson }}").find("nested more than"),
            std::string::npos);
}

TEST(JinjaErrors, StringsListsAndOutputAreBounded) {
  EXPECT_NE(error_of("{{ 'a' * 99999999999 }}").find("too large"), std::string::npos);
  EXPECT_NE(error_of("{{ [1, 2] * 99999999999 }}").find("too large"), std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(x='ab') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}")
                .find("more than 16 MiB"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'a\nb' | indent(999999999999) }}").find("indent: width"), std::string::npos);
  EXPECT_NE(error_of("{{ [1] | tojson(indent=999999999) }}").find("indent"), std::string::npos);
  EXPECT_NE(error_of("{% set x = 'a' * 8000000 %}{% for i in range(20) %}{{ x }}{% endfor %}").find("output passed"),
            std::string::npos);
  EXPECT_EQ(render("{{ ('ab' * 3) | length }} {{ 'a\nb' | indent(2) }}"), "6 a\n  b");
}

}  // namespace
}  // namespace tokenmill::tokenizer::jinja
