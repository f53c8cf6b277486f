// The syntax tree of a parsed Jinja template: expressions and statements.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace tokenmill::tokenizer::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,      // value
    kName,         // name
    kList,         // [children...]
    kDict,         // {keys[i]: children[i]}; keys are expressions in key_exprs
    kAttribute,    // children[0].name
    kSubscript,    // children[0][children[1]]
    kSlice,        // children[0][children[1]:children[2]:children[3]] (null parts allowed)
    kCall,         // children[0](children[1..], kwargs)
    kFilter,       // children[0] | name(children[1..], kwargs)
    kTest,         // children[0] is [not] name(children[1..])
    kUnary,        // name in {"not", "-", "+"} applied to children[0]
    kBinary,       // children[0] name children[1]; name is the operator or and/or/in/not in
    kConditional,  // children[1] if children[0] else children[2] (children[2] may be null)
    kCompare,      // children[0] ops[0] children[1] ops[1] children[2] ...: Python's chained
                   // comparison, each operand evaluated once ("in" and "not in" included)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  bool negated = false;                             // kTest: "is not"
  std::vector<ExprPtr> children;
  std::vector<ExprPtr> key_exprs;                   // kDict keys
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // kCall / kFilter keyword arguments
  std::vector<std::string> ops;                     // kCompare operators
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conditions[i] -> bodies[i]; a trailing body without condition is "else"
    kFor,       // for targets in expr [if filter] : bodies[0], else: bodies[1]
    kSet,       // set targets (or target.attr) = expr
    kSetBlock,  // set name %} bodies[0] {% endset
    kMacro,     // macro name(params) : bodies[0]
    kBreak,
    kContinue,
    kFilterBlock,  // filter name(args) : bodies[0]; filter expression in expr with a null operand
    kBlock,     // a body rendered as is ({% generation %} from HF's chat templates)
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;                  // kFor "if" clause
  std::vector<ExprPtr> conditions;  // kIf
  std::vector<Body> bodies;
  std::vector<std::string> targets;  // kFor loop variables, kSet names, kSetBlock/kMacro name
  std::string attribute;             // kSet: "set ns.attribute = ..."
  std::vector<MacroParam> params;    // kMacro
};

}  // namespace tokenmill::tokenizer::jinja
