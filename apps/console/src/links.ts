/** A person's page: every link to a person (drill-downs, people lists, cohorts) goes here. */
export const personHref = (projectId: string | number, distinctId: string) => `/projects/${projectId}/people/${encodeURIComponent(distinctId)}`;
