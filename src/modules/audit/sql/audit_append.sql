-- Appends one audit record (docs/decisions/0032-audit-trail.md): AuditService.append calls it with the caller's
-- transaction, and the money path's functions call it beside the rows they write, so a rolled-back change leaves
-- no record. p_actor is `kind:name` as journal entries record it: `client:<appId>`, `subject:<uuid>`,
-- `cli:<os user>` or `system:<component>`; p_action the route template (`POST /v1/users/{uuid}/kyc-data`) or the
-- command (`apps create`). Usage from SQL:
--   PERFORM audit_append(app_id, p->>'actor', p->>'route', 'transfer', id::text, 'ACREDITADO', p->>'requestId');
-- Guarantees: ids and route templates only, never personal data (nothing here reads any).
CREATE OR REPLACE FUNCTION public.audit_append(p_app_id uuid, p_actor text, p_action text, p_resource_type text, p_resource_id text, p_outcome text, p_request_id text)
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO audit_records (app_id, principal_type, principal, action, resource_type, resource_id, outcome, request_id)
  VALUES (p_app_id, split_part(p_actor, ':', 1), substr(p_actor, strpos(p_actor, ':') + 1),
          coalesce(p_action, 'unknown'), p_resource_type, p_resource_id, p_outcome, p_request_id);
$function$
