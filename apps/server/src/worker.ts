/**
 * A background loop of the `worker` role (e.g. the ingestion consumer). Its own module so that
 * workers.ts (which starts them all) imports the domains and no domain imports workers.ts.
 */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}
