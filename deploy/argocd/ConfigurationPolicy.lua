-- Argo CD health of a ConfigurationPolicy, policy.open-cluster-management.io/v1,
-- on a managed cluster: Healthy when Compliant, Degraded when NonCompliant
-- (with the first violation), Progressing while Pending or not evaluated at
-- its current generation. Argo CD opens no string library for health
-- scripts: none is used here.
local hs = {}
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted"
  return hs
end
local status = obj.status
if status == nil or status.compliant == nil or status.compliant == "" then
  hs.status = "Progressing"
  hs.message = "Waiting for the policy to be evaluated"
  return hs
end
if status.lastEvaluatedGeneration ~= nil and status.lastEvaluatedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for generation " .. obj.metadata.generation .. " to be evaluated"
  return hs
end
-- The first condition of the first object template in the policy's state.
local message = status.compliant
for _, detail in ipairs(status.compliancyDetails or {}) do
  if detail.Compliant == status.compliant then
    local condition = (detail.conditions or {})[1]
    if condition ~= nil and condition.message ~= nil then
      message = condition.message
      break
    end
  end
end
if status.compliant == "Compliant" then
  hs.status = "Healthy"
elseif status.compliant == "NonCompliant" then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
hs.message = message
return hs
