-- A small XML reader for annotation files (PASCAL VOC's): parse(text, name) gives the root
-- element as {tag=, attrib={name -> value}, text=, children={...}}, where text is the
-- character data before the first child (nil when there is none), as ElementTree's
-- element.text. Comments, processing instructions, DOCTYPE and CDATA sections are handled;
-- DTDs are not read (only the five predefined entities and character references are known).
local M = {}

local entities = {amp = "&", lt = "<", gt = ">", quot = '"', apos = "'"}

local function fail(name, s, pos, msg)
  local line = select(2, s:sub(1, pos):gsub("\n", "")) + 1
  error(string.format("%s: not well-formed XML (%s, line %d)", name, msg, line), 0)
end

local function unescape(name, s, pos, raw)
  return (raw:gsub("&(#?[%w]+);", function(e)
    if e:sub(1, 1) == "#" then
      local code = e:sub(2, 2) == "x" and tonumber(e:sub(3), 16) or tonumber(e:sub(2), 10)
      if not code or code > 0x10FFFF then fail(name, s, pos, "bad character reference &" .. e .. ";") end
      return utf8.char(code)
    end
    return entities[e] or fail(name, s, pos, "undefined entity &" .. e .. ";")
  end))
end

function M.parse(s, name)
  name = name or "<xml>"
  local pos, n = 1, #s
  local root
  local stack = {}
  -- text goes to the current element while it has no child yet
  local function add_text(t)
    local top = stack[#stack]
    if top and #top.children == 0 then top.text = (top.text or "") .. t
    elseif not top and t:find("%S") then fail(name, s, pos, "text outside the root element") end
  end
  while pos <= n do
    local lt = s:find("<", pos, true)
    if not lt then
      add_text(unescape(name, s, pos, s:sub(pos)))
      break
    end
    if lt > pos then add_text(unescape(name, s, pos, s:sub(pos, lt - 1))) end
    pos = lt
    if s:sub(pos, pos + 3) == "<!--" then
      local e = s:find("-->", pos + 4, true) or fail(name, s, pos, "unclosed comment")
      pos = e + 3
    elseif s:sub(pos, pos + 8) == "<![CDATA[" then
      local e = s:find("]]>", pos + 9, true) or fail(name, s, pos, "unclosed CDATA section")
      add_text(s:sub(pos + 9, e - 1))
      pos = e + 3
    elseif s:sub(pos, pos + 1) == "<?" then
      local e = s:find("?>", pos + 2, true) or fail(name, s, pos, "unclosed processing instruction")
      pos = e + 2
    elseif s:sub(pos, pos + 1) == "<!" then
      local e = s:find(">", pos + 2, true) or fail(name, s, pos, "unclosed declaration")
      pos = e + 1
    elseif s:sub(pos, pos + 1) == "</" then
      local tag, e = s:match("^</([^%s>/]+)%s*>()", pos)
      if not tag then fail(name, s, pos, "bad end tag") end
      local top = table.remove(stack)
      if not top or top.tag ~= tag then fail(name, s, pos, "mismatched tag </" .. tag .. ">") end
      pos = e
    else
      local tag, p = s:match("^<([^%s>/=]+)()", pos)
      if not tag then fail(name, s, pos, "bad start tag") end
      local el = {tag = tag, attrib = {}, children = {}}
      while true do
        local ws = s:match("^%s*()", p)
        local close = s:match("^(/?>)", ws)
        if close then
          p = ws + #close
          if close == "/>" then el.closed = true end
          break
        end
        local k, q, v, e = s:match("^([^%s=/>]+)%s*=%s*(['\"])(.-)%2()", ws)
        if not k or ws == p then fail(name, s, p, "bad attribute in <" .. tag .. ">") end
        el.attrib[k] = unescape(name, s, p, v)
        p = e
      end
      local parent = stack[#stack]
      if parent then parent.children[#parent.children + 1] = el
      elseif root then fail(name, s, pos, "a second root element")
      else root = el end
      if not el.closed then stack[#stack + 1] = el end
      el.closed = nil
      pos = p
    end
  end
  if #stack > 0 then fail(name, s, n, "unclosed <" .. stack[#stack].tag .. ">") end
  if not root then fail(name, s, n, "no element found") end
  return root
end

return M
