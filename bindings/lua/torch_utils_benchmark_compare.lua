-- torch.utils.benchmark.Compare: Measurements laid out as PyTorch's table (one table per label;
-- rows = num_threads, env and sub_label (or stmt); columns = description), with replicates
-- merged, trim_significant_figures, colorize (columnwise, or rowwise) and highlight_warnings.
-- The layout follows torch/utils/benchmark/utils/compare.py: columns joined by "  |  ", cells
-- centred as Python's str.center, a "N threads: ---" line where the thread count changes.
local torch = require "torch"
local U = require "nn_util"
local benchmark = torch.utils.benchmark
local common = benchmark._common
local Measurement = benchmark.Measurement

local BEST, GOOD, BAD, VERY_BAD = "\27[92m", "\27[34m", "\27[2m\27[91m", "\27[31m"
local BOLD, TERMINATE = "\27[1m", "\27[0m"

-- Python's str.ljust and str.center (the odd space goes left when the width is odd, as CPython's pad)
local function ljust(s, w, fill) return s .. string.rep(fill or " ", w - #s) end
local function center(s, w, fill)
  local marg = w - #s
  if marg <= 0 then return s end
  local left = marg // 2 + (marg & w & 1)
  return string.rep(fill or " ", left) .. s .. string.rep(fill or " ", marg - left)
end
common.center = center

local function env_str(e) return e == nil and "None" or tostring(e) end

-- ---- a column: its number format from the widest value and, trimmed, the least certain ----

local Column = {}
Column.__index = Column

local function new_column(grouped, time_scale, trim, highlight)
  local self = setmetatable({ grouped = grouped, trim = trim }, Column)
  local flat = {}
  for _, g in ipairs(grouped) do for i = 1, g.n do flat[#flat + 1] = g[i] or false end end
  local any_warn = false
  for _, r in ipairs(flat) do if r and r.has_warnings then any_warn = true end end
  self.highlight = highlight and any_warn
  -- leading digits as PyTorch computes them: ceil(log10) of a float32 tensor
  local unit_digits, decimal_digits = nil, nil
  for _, r in ipairs(flat) do
    if r then
      local d = math.tointeger(torch.tensor(r.median / time_scale):log10():ceil():item())
      unit_digits = math.max(unit_digits or d, d)
      local dd = math.max(r.significant_figures - d, 0)
      decimal_digits = math.min(decimal_digits or dd, dd)
    end
  end
  if not trim then decimal_digits = 1 end
  self.decimal_digits = decimal_digits
  self.length = unit_digits + decimal_digits + (decimal_digits > 0 and 1 or 0)
  return self
end

function Column:num_to_str(value, sigfigs, spread)
  if value == nil then return string.rep(" ", #self:num_to_str(1, sigfigs, nil)) end
  if self.trim then value = common.trim_sigfig(value, sigfigs) end
  local s = string.format("%" .. self.length .. "." .. self.decimal_digits .. "f", value)
  if self.highlight then
    s = s .. string.format("%7s", spread and string.format(" (! %.0f%%)", spread * 100) or "")
  end
  return s
end

-- ---- a row ----

local function color_segment(segment, value, best)
  if value <= best * 1.01 or value <= best + 100e-9 then return BEST .. BOLD .. segment .. TERMINATE .. TERMINATE end
  if value <= best * 1.1 then return GOOD .. BOLD .. segment .. TERMINATE .. TERMINATE end
  if value >= best * 5 then return VERY_BAD .. BOLD .. segment .. TERMINATE .. TERMINATE end
  if value >= best * 2 then return BAD .. segment .. TERMINATE .. TERMINATE end
  return segment
end

local function row_strings(row, columns)
  local first
  for i = 1, row.n do if row.results[i] then first = row.results[i]; break end end
  local env = row.render_env and ("(" .. env_str(first.env) .. ")") or ""
  local out = { "  " .. ljust(env, row.env_str_len + 4) .. first.as_row_name }
  for i, col in ipairs(columns) do
    local m = row.results[i]
    if not m then out[#out + 1] = col:num_to_str(nil, 1, nil)
    else
      out[#out + 1] = col:num_to_str(m.median / row.time_scale, m.significant_figures,
        m.has_warnings and (m.iqr / m.median) or nil)
    end
  end
  return out
end

local function finalize_row(row, strings, widths, columns, colorize)
  local best = {}
  if colorize == "rowwise" then
    local lo
    for i = 1, row.n do local r = row.results[i]; if r then lo = math.min(lo or r.median, r.median) end end
    for i = 1, #strings do best[i] = lo end
  elseif colorize == "columnwise" then
    for i, col in ipairs(columns) do
      local g, lo = col.grouped[row.group], nil
      for j = 1, g.n do local r = g[j]; if r then lo = math.min(lo or r.median, r.median) end end
      best[i] = lo
    end
  end
  local out = { ljust(strings[1], widths[1]) }
  for i = 2, #strings do
    local s = center(strings[i], widths[i])
    local r = row.results[i - 1]
    if colorize ~= "none" and r and best[i - 1] then s = color_segment(s, r.median, best[i - 1]) end
    out[#out + 1] = s
  end
  return out
end

-- ---- one table (one label) ----

local function render_table(results, colorize, trim, highlight)
  local label = results[1].label
  local lo = math.huge
  for _, r in ipairs(results) do lo = math.min(lo, r.median) end
  local time_unit, time_scale = common.select_unit(lo)
  -- rows: (num_threads, env, row name) in first-seen order, then stably by thread count and env
  local row_keys, row_index, col_keys, col_index = {}, {}, {}, {}
  for _, r in ipairs(results) do
    local k = r.num_threads .. "\0" .. env_str(r.env) .. "\0" .. r.as_row_name
    if not row_index[k] then
      row_keys[#row_keys + 1] = { key = k, threads = r.num_threads, env = r.env, seen = #row_keys + 1 }
      row_index[k] = true
    end
    local c = r.description == nil and "\0nil" or r.description
    if not col_index[c] then col_keys[#col_keys + 1] = r.description or ""; col_index[c] = #col_keys end
  end
  table.sort(row_keys, function(a, b)
    if a.threads ~= b.threads then return a.threads < b.threads end
    local ea, eb = a.env or "", b.env or ""
    if ea ~= eb then return ea < eb end
    return a.seen < b.seen
  end)
  for i, rk in ipairs(row_keys) do row_index[rk.key] = i end
  local ordered = {}
  for i = 1, #row_keys do ordered[i] = { n = #col_keys } end
  for _, r in ipairs(results) do
    local k = r.num_threads .. "\0" .. env_str(r.env) .. "\0" .. r.as_row_name
    ordered[row_index[k]][col_index[r.description == nil and "\0nil" or r.description]] = r
  end
  local envs, n_envs, env_len = {}, 0, 0
  for _, r in ipairs(results) do
    local e = env_str(r.env)
    if not envs[e] then envs[e] = true; n_envs = n_envs + 1 end
    env_len = math.max(env_len, #e)
  end
  local render_env = n_envs > 1
  if not render_env then env_len = 0 end
  local rows, groups = {}, {}
  local prior_threads, prior_env = -1, ""
  for i, rk in ipairs(row_keys) do
    local transition = rk.threads ~= prior_threads
    if transition then prior_threads, prior_env = rk.threads, ""; groups[#groups + 1] = {} end
    rows[i] = { results = ordered[i], n = #col_keys, group = #groups, render_env = render_env and env_str(rk.env) ~= prior_env,
      env_str_len = env_len, time_scale = time_scale, num_threads = transition and rk.threads or nil }
    table.insert(groups[#groups], ordered[i])
    prior_env = env_str(rk.env)
  end
  local columns = {}
  for j = 1, #col_keys do
    local grouped = {}
    for gi, g in ipairs(groups) do
      local col = { n = #g }
      for ri, row in ipairs(g) do col[ri] = row[j] end
      grouped[gi] = col
    end
    columns[j] = new_column(grouped, time_scale, trim, highlight)
  end
  -- strings, widths, and the lines
  local string_rows = { { "" } }
  for _, c in ipairs(col_keys) do table.insert(string_rows[1], c) end
  for i, row in ipairs(rows) do string_rows[i + 1] = row_strings(row, columns) end
  local ncols = 0
  for _, sr in ipairs(string_rows) do ncols = math.max(ncols, #sr) end
  local widths = {}
  for c = 1, ncols do
    widths[c] = 0
    for _, sr in ipairs(string_rows) do sr[c] = sr[c] or ""; widths[c] = math.max(widths[c], #sr[c]) end
  end
  local head = {}
  for c = 1, ncols do head[c] = center(string_rows[1][c], widths[c]) end
  local lines = { table.concat(head, "  |  ") }
  local overall = #lines[1]
  for i, row in ipairs(rows) do
    if row.num_threads then lines[#lines + 1] = ljust(row.num_threads .. " threads: ", overall, "-") end
    lines[#lines + 1] = table.concat(finalize_row(row, string_rows[i + 1], widths, columns, colorize), "  |  ")
  end
  local warned = false
  if highlight then for _, r in ipairs(results) do if r.has_warnings then warned = true end end end
  return "[" .. center(" " .. (label or "") .. " ", overall - 2, "-") .. "]\n" .. table.concat(lines, "\n") .. "\n\n"
    .. "Times are in " .. common.unit_to_english(time_unit) .. "s (" .. time_unit .. ").\n"
    .. (warned and "(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n" or "")
end

-- ---- Compare ----

local Compare = {}
Compare.__index = Compare
Compare.__name = "torch.utils.benchmark.utils.compare.Compare"
benchmark.Compare = setmetatable(Compare, { __call = function(cls, ...) return cls.new(...) end })
benchmark.Colorize = { NONE = "none", COLUMNWISE = "columnwise", ROWWISE = "rowwise" }

-- Compare(results): a list of Measurements
function Compare.new(results)
  local self = setmetatable({ _results = {}, _trim_significant_figures = false, _colorize = "none",
    _highlight_warnings = false }, Compare)
  self:extend_results(results)
  return self
end

function Compare:extend_results(results)
  if type(results) ~= "table" then U.errorf("Compare: results must be a list of Measurements, got %s", U.typename(results)) end
  for _, r in ipairs(results) do
    if not benchmark.is_measurement(r) then
      U.errorf("Expected an instance of `Measurement`, got <class '%s'> instead.", U.typename(r))
    end
  end
  for _, r in ipairs(results) do self._results[#self._results + 1] = r end
end

function Compare:trim_significant_figures() self._trim_significant_figures = true end
-- colorize(rowwise = false): the best value of each column (or row) in bold green
function Compare:colorize(rowwise)
  if U.is_opts(rowwise) then rowwise = rowwise.rowwise end
  self._colorize = rowwise and "rowwise" or "columnwise"
end
function Compare:highlight_warnings() self._highlight_warnings = true end

function Compare:_render()
  local merged = Measurement.merge(self._results)
  local order, by_label = {}, {}
  for _, r in ipairs(merged) do
    local k = r.label == nil and "\0nil" or r.label
    if not by_label[k] then by_label[k] = {}; order[#order + 1] = k end
    table.insert(by_label[k], r)
  end
  local out = {}
  for i, k in ipairs(order) do
    out[i] = render_table(by_label[k], self._colorize, self._trim_significant_figures, self._highlight_warnings)
  end
  return out
end

function Compare:__tostring() return table.concat(self:_render(), "\n") end
function Compare:print() print(tostring(self)) end

return Compare
