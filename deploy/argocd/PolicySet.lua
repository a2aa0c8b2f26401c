-- Argo CD health of a Canopy (OCM) PolicySet, policy.open-cluster-management.io/v1beta1.
-- Healthy when its members are Compliant, and also when no binding places
-- it (it has nothing to report: the message says so); Degraded when a member
-- is NonCompliant; Progressing while members are Pending on their
-- dependencies or have not reported. Argo CD opens no string library for
-- health scripts: none is used here.
local hs = {}
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted"
  return hs
end
local spec = obj.spec or {}
if spec.disabled == true then
  hs.status = "Suspended"
  hs.message = "Disabled (spec.disabled)"
  return hs
end
local status = obj.status
if status == nil or (status.statusMessage == nil and status.compliant == nil and status.placement == nil) then
  hs.status = "Progressing"
  hs.message = "Waiting for the hub to report the set's status"
  return hs
end
for _, condition in ipairs(status.conditions or {}) do
  -- RolledOut is False with RolloutProgressing while the set rolls out, and
  -- False with another reason (MaxFailuresReached, ...) when it stopped.
  if condition.type == "RolledOut" and condition.status == "False" and condition.reason ~= "RolloutProgressing" then
    hs.status = "Degraded"
    hs.message = (condition.reason or "") .. ": " .. (condition.message or "")
    return hs
  end
end
local detail = status.statusMessage or ""
if status.placement == nil or #status.placement == 0 then
  hs.status = "Healthy"
  hs.message = "Placed on no cluster: no PlacementBinding in namespace " .. obj.metadata.namespace .. " names this set"
  return hs
end
local members = table.concat(spec.policies or {}, ", ")
if status.compliant == "Compliant" then
  hs.status = "Healthy"
  hs.message = "Compliant: " .. members
elseif status.compliant == "NonCompliant" then
  hs.status = "Degraded"
  hs.message = "NonCompliant: a member policy is NonCompliant (members: " .. members .. ")"
  if detail ~= "" and detail ~= "All policies are reporting status" then
    hs.message = hs.message .. "; " .. detail
  end
elseif status.compliant == "Pending" then
  hs.status = "Progressing"
  hs.message = "Pending: " .. detail
else
  hs.status = "Progressing"
  hs.message = "Waiting for the members to report: " .. detail
end
return hs
