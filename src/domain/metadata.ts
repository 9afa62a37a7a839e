/**
 * The limits of merchant metadata (docs/api.md, Metadata):
 * the API's validation and the database's merge both read them here.
 */
export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_KEY_LENGTH = 40;
export const METADATA_MAX_VALUE_LENGTH = 500;
