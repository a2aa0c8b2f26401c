-- Argo CD health of a Canopy (OCM) Policy, policy.open-cluster-management.io/v1.
-- A root policy (on the hub) is Healthy when Compliant on every cluster it is
-- placed on, and also when it is placed on no cluster (it has nothing to
-- report: the message says which binding to create); Degraded when
-- NonCompliant, when its propagation failed or its rollout stopped;
-- Progressing while Pending on its dependencies or while clusters have not
-- reported. A replica (labelled with its root) reports its templates.
-- Argo CD opens no string library for health scripts: none is used here.
local hs = {}
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted"
  return hs
end
local spec = obj.spec or {}
if spec.disabled == true then
  hs.status = "Suspended"
  hs.message = "Disabled (spec.disabled): the policy has no replicas"
  return hs
end
local status = obj.status or {}
local labels = obj.metadata.labels or {}

-- A replica: the first template that is not Compliant gives the message.
if labels["policy.open-cluster-management.io/root-policy"] ~= nil then
  if status.compliant == nil or status.compliant == "" then
    hs.status = "Progressing"
    hs.message = "Waiting for the managed cluster to report"
    return hs
  end
  local message = status.compliant
  for _, detail in ipairs(status.details or {}) do
    if detail.compliant ~= "Compliant" then
      local name = (detail.templateMeta or {}).name or ""
      local last = (detail.history or {})[1]
      if last ~= nil and last.message ~= nil then
        message = "Template " .. name .. ": " .. last.message
      else
        message = "Template " .. name .. ": " .. (detail.compliant or "no status")
      end
      break
    end
  end
  if status.compliant == "Compliant" then
    hs.status = "Healthy"
    hs.message = "Compliant"
  elseif status.compliant == "NonCompliant" then
    hs.status = "Degraded"
    hs.message = message
  else
    hs.status = "Progressing"
    hs.message = message
  end
  return hs
end

-- A root policy: the hub's Propagated condition first.
local propagated = nil
for _, condition in ipairs(status.conditions or {}) do
  if condition.type == "Propagated" then
    propagated = condition
  end
end
if propagated == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the hub to propagate the policy"
  return hs
end
if propagated.observedGeneration ~= nil and propagated.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the hub to propagate generation " .. obj.metadata.generation
  return hs
end
if propagated.status ~= "True" then
  if propagated.reason == "NoClustersSelected" then
    hs.status = "Healthy"
    hs.message = "Placed on no cluster: " .. (propagated.message or "")
  elseif propagated.reason == "Disabled" then
    hs.status = "Suspended"
    hs.message = propagated.message or "Disabled"
  else
    hs.status = "Degraded"
    hs.message = (propagated.reason or "") .. ": " .. (propagated.message or "")
  end
  return hs
end
if status.rollout ~= nil and status.rollout.phase == "Stopped" then
  hs.status = "Degraded"
  hs.message = "Rollout stopped (" .. (status.rollout.reason or "") .. "): " .. (status.rollout.message or "")
  return hs
end

-- The clusters, by compliance, in the order the status lists them.
local byState = {Compliant = {}, NonCompliant = {}, Pending = {}, unknown = {}}
local total = 0
for _, entry in ipairs(status.status or {}) do
  local state = entry.compliant
  if byState[state] == nil then
    state = "unknown"
  end
  table.insert(byState[state], entry.clustername)
  total = total + 1
end
local function clusters(names)
  local shown = {}
  for i, name in ipairs(names) do
    if i > 5 then
      table.insert(shown, "and " .. (#names - 5) .. " more")
      break
    end
    table.insert(shown, name)
  end
  return table.concat(shown, ", ")
end

if status.compliant == "NonCompliant" then
  local first = byState.NonCompliant[1]
  hs.status = "Degraded"
  hs.message = "NonCompliant on " .. #byState.NonCompliant .. " of " .. total .. " clusters: " .. clusters(byState.NonCompliant)
  if first ~= nil then
    hs.message = hs.message .. " (the reasons are in the replica " .. first .. "/" .. obj.metadata.namespace .. "." .. obj.metadata.name .. ")"
  end
  return hs
end
if status.compliant == "Pending" then
  local deps = {}
  local function add(list)
    for _, dep in ipairs(list or {}) do
      local name = dep.name or ""
      if dep.namespace ~= nil and dep.namespace ~= "" then
        name = dep.namespace .. "/" .. name
      end
      table.insert(deps, (dep.kind or "") .. " " .. name .. " to be " .. (dep.compliance or "Compliant"))
    end
  end
  add(spec.dependencies)
  for _, template in ipairs(spec["policy-templates"] or {}) do
    add(template.extraDependencies)
  end
  hs.status = "Progressing"
  hs.message = "Pending on " .. clusters(byState.Pending)
  if #deps > 0 then
    hs.message = hs.message .. ": waiting for " .. table.concat(deps, ", ")
  end
  return hs
end
if #byState.unknown > 0 or total == 0 then
  hs.status = "Progressing"
  hs.message = "Waiting for " .. #byState.unknown .. " of " .. total .. " clusters to report: " .. clusters(byState.unknown)
  return hs
end
if status.compliant == "Compliant" then
  hs.status = "Healthy"
  hs.message = "Compliant on " .. total .. " of " .. total .. " clusters"
  return hs
end
hs.status = "Progressing"
hs.message = "Waiting for the compliance of the clusters"
return hs
