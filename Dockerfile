# The Airflow image with the project's pinned dependencies (docker-compose.yml builds it).
FROM apache/airflow:3.3.2-python3.11
COPY requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -r /tmp/requirements.txt
