import { z } from 'zod';
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';

// Schemas call `.openapi(...)` when their module loads: every module that declares one imports
// this first, so the order in which modules load does not matter.
extendZodWithOpenApi(z);
