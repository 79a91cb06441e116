-- Argo CD health of a Tally resource (Organization, Project, FlagSecret, FeatureFlag, ApiToken, Experiment),
-- read from the operator's status: the Ready condition, once the operator has seen this generation.
--   Ready=True  -> Healthy;  Ready=False -> Degraded (reason: message);
--   no status yet, an older observedGeneration, Ready=Unknown, or deleting -> Progressing.
local hs = { status = "Progressing", message = "Waiting for the Tally operator to reconcile" }
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.message = "Deleting: waiting for the operator's finalizer (deletionPolicy decides what happens in Tally)"
  return hs
end
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local generation = obj.metadata and obj.metadata.generation
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Ready" then
    local seen = c.observedGeneration or obj.status.observedGeneration
    if generation ~= nil and seen ~= nil and seen < generation then
      hs.message = "The operator has not reconciled generation " .. tostring(generation) .. " yet (last: " .. tostring(seen) .. ")"
      return hs
    end
    local why = (c.reason or "") .. ": " .. (c.message or "")
    if c.status == "True" then
      hs.status = "Healthy"
    elseif c.status == "False" then
      hs.status = "Degraded"
    end
    hs.message = why
    return hs
  end
end
return hs
