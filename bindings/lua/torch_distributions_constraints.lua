-- torch.distributions.constraints: the sets a distribution's parameters and samples live in.
-- Each constraint has check(value) -> a bool tensor (over value's shape less event_dim
-- rightmost dims), is_discrete, event_dim, and PyTorch's repr ("GreaterThan(lower_bound=0.0)").
--   constraints.positive:check(torch.tensor({1, -1}))   -- tensor([ True, False])
local torch = require "torch"
local U = require "nn_util"

local C = {}

local Constraint = { __name = "torch.distributions.constraints.Constraint" }
Constraint.__index = Constraint
Constraint.__tostring = function(self) return self.repr end

local function num(v) return torch.is_tensor(v) and tostring(v) or U.pystr(v) end

-- opts: is_discrete, event_dim, is_dependent, and fields (lower_bound, base_constraint, ...)
local function new(repr, check, opts)
  opts = opts or {}
  local c = setmetatable({ repr = repr, _check = check, is_discrete = opts.is_discrete or false,
    event_dim = opts.event_dim or 0, is_dependent = opts.is_dependent or false }, Constraint)
  for k, v in pairs(opts.fields or {}) do c[k] = v end
  return c
end

-- the constraint's kind, PyTorch's class name less the underscore: "GreaterThan", "Simplex"
function Constraint:kind() return self.repr:match("^(%w+)") end

function Constraint:check(value) return self._check(value) end

-- all of a bool tensor over its n rightmost dims
local function all_rightmost(t, n)
  for _ = 1, n do t = t:logical_not():any(-1):logical_not() end
  return t
end
C._all_rightmost = all_rightmost

local function is_integer(v) return v:eq(v:floor()) end

C.dependent = new("Dependent()", function() U.error("ValueError: Cannot determine validity of dependent constraint") end,
  { is_dependent = true })
C.real = new("Real()", function(v) return v:eq(v) end)
C.boolean = new("Boolean()", function(v) return v:eq(0):logical_or(v:eq(1)) end, { is_discrete = true })

function C.greater_than(lb)
  return new("GreaterThan(lower_bound=" .. num(lb) .. ")", function(v) return v:gt(lb) end, { fields = { lower_bound = lb } })
end
function C.greater_than_eq(lb)
  return new("GreaterThanEq(lower_bound=" .. num(lb) .. ")", function(v) return v:ge(lb) end, { fields = { lower_bound = lb } })
end
function C.less_than(ub)
  return new("LessThan(upper_bound=" .. num(ub) .. ")", function(v) return v:lt(ub) end, { fields = { upper_bound = ub } })
end
function C.interval(lb, ub)
  return new("Interval(lower_bound=" .. num(lb) .. ", upper_bound=" .. num(ub) .. ")",
    function(v) return v:ge(lb):logical_and(v:le(ub)) end, { fields = { lower_bound = lb, upper_bound = ub } })
end
function C.half_open_interval(lb, ub)
  return new("HalfOpenInterval(lower_bound=" .. num(lb) .. ", upper_bound=" .. num(ub) .. ")",
    function(v) return v:ge(lb):logical_and(v:lt(ub)) end, { fields = { lower_bound = lb, upper_bound = ub } })
end
function C.integer_interval(lb, ub)
  return new("IntegerInterval(lower_bound=" .. num(lb) .. ", upper_bound=" .. num(ub) .. ")",
    function(v) return is_integer(v):logical_and(v:ge(lb)):logical_and(v:le(ub)) end, { is_discrete = true })
end
function C.integer_greater_than(lb)
  return new("IntegerGreaterThan(lower_bound=" .. num(lb) .. ")",
    function(v) return is_integer(v):logical_and(v:ge(lb)) end, { is_discrete = true })
end

-- base's check reduced over the n rightmost dims, which become event dims
function C.independent(base, n)
  return new(string.format("IndependentConstraint(%s, %d)", tostring(base), n),
    function(v) return all_rightmost(base:check(v), n) end,
    { is_discrete = base.is_discrete, event_dim = base.event_dim + n,
      fields = { base_constraint = base, reinterpreted_batch_ndims = n } })
end

C.positive = C.greater_than(0.0)
C.nonnegative = C.greater_than_eq(0.0)
C.unit_interval = C.interval(0.0, 1.0)
C.nonnegative_integer = C.integer_greater_than(0)
C.positive_integer = C.integer_greater_than(1)
C.real_vector = C.independent(C.real, 1)
C.simplex = new("Simplex()", function(v)
  return all_rightmost(v:ge(0), 1):logical_and((v:sum(-1) - 1):abs():lt(1e-6))
end, { event_dim = 1 })
C.one_hot = new("OneHot()", function(v)
  return all_rightmost(v:eq(0):logical_or(v:eq(1)), 1):logical_and(v:sum(-1):eq(1))
end, { is_discrete = true, event_dim = 1 })
C.lower_cholesky = new("LowerCholesky()", function(v)
  return all_rightmost(v:tril():eq(v), 2):logical_and(all_rightmost(v:diagonal(0, -2, -1):gt(0), 1))
end, { event_dim = 2 })
C.positive_semidefinite = new("PositiveSemidefinite()", function(v)
  local sym = all_rightmost((v - v:transpose(-2, -1)):abs():le(1e-6 * (v:abs() + 1)), 2)
  return sym:logical_and(all_rightmost(torch.linalg.eigvalsh(v):ge(0), 1))
end, { event_dim = 2 })
-- lower triangular, positive diagonal, rows of unit norm: the Cholesky factor of a correlation matrix
C.corr_cholesky = new("CorrCholesky()", function(v)
  local tol = torch.finfo(v.dtype).eps * v:size(-1) * 10
  local unit = ((v * v):sum(-1):sqrt() - 1):abs():le(tol)
  return C.lower_cholesky:check(v):logical_and(all_rightmost(unit, 1))
end, { event_dim = 2 })
-- nonnegative integer vectors summing to at most upper_bound
function C.multinomial(ub)
  return new("Multinomial(upper_bound=" .. num(ub) .. ")", function(v)
    return all_rightmost(v:ge(0):logical_and(is_integer(v)), 1):logical_and(v:sum(-1):le(ub))
  end, { is_discrete = true, event_dim = 1, fields = { upper_bound = ub } })
end
C.positive_definite = new("PositiveDefinite()", function(v)
  local sym = all_rightmost((v - v:transpose(-2, -1)):abs():le(1e-6 * (v:abs() + 1)), 2)
  return sym:logical_and(all_rightmost(torch.linalg.eigvalsh(v):gt(0), 1))
end, { event_dim = 2 })

return C
