import { z } from 'zod';
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';

// The service's schemas call `.openapi(...)` when their module loads; this must run first (it is a
// no-op when the server already did it). Imported for its side effect before any service schema.
extendZodWithOpenApi(z);
