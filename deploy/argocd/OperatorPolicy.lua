-- Argo CD health of an OperatorPolicy, policy.open-cluster-management.io/v1beta1,
-- on a managed cluster: Healthy when Compliant, Degraded when NonCompliant
-- (with the first unmet condition, in the order of the Compliant condition's
-- message), Progressing while Pending or not evaluated at its current
-- generation. Argo CD opens no string library for health scripts: none is
-- used here.
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
if status.observedGeneration ~= nil and status.observedGeneration ~= obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for generation " .. obj.metadata.generation .. " to be evaluated"
  return hs
end
local conditions = {}
for _, condition in ipairs(status.conditions or {}) do
  conditions[condition.type] = condition
end
local summary = (conditions.Compliant or {}).message or status.compliant
if status.compliant == "Compliant" then
  hs.status = "Healthy"
  hs.message = summary
  return hs
end
if status.compliant ~= "NonCompliant" then
  hs.status = "Progressing"
  hs.message = summary
  return hs
end
-- Each condition type, and the status it has when it is unmet.
local unmet = {
  {"ValidPolicySpec", "False"},
  {"OperatorGroupCompliant", "False"},
  {"SubscriptionCompliant", "False"},
  {"InstallPlanCompliant", "False"},
  {"ClusterServiceVersionCompliant", "False"},
  {"CustomResourceDefinitionCompliant", "False"},
  {"DeploymentCompliant", "False"},
  {"CatalogSourcesUnhealthy", "True"},
}
hs.status = "Degraded"
hs.message = summary
for _, pair in ipairs(unmet) do
  local condition = conditions[pair[1]]
  if condition ~= nil and condition.status == pair[2] and condition.message ~= nil then
    hs.message = condition.message
    break
  end
end
return hs
