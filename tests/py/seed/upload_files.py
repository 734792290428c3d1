from faker import Faker
import random
import os
import oss2
import datetime

def send_testing_data_file_to_oss(oss_bucket, file_counts, name_pattern):
    fake = Faker(locale='ja_jp')
    for i in range(file_counts):
        data = []
        counts = random.randint(1, 30)
        print('Generate {0} lines as data.'.format(counts))
        for c in range(counts):
            data.append('{0},"{1}","{2}"'.format(fake.name(), fake.address(), fake.text()))
        tmp_file_name = name_pattern.format(i)
        oss_bucket.put_object(tmp_file_name, "\r\n".join(data))
        print('Upload testing data file: {0} successfully!'.format(tmp_file_name))

auth = oss2.Auth(os.environ['OSS_ACCESS_KEY_ID'], os.environ['OSS_ACCESS_KEY_SECRET'])
bucket = oss2.Bucket(auth, os.environ['OSS_ENDPOINT'], os.environ['OSS_BUCKET'])
send_testing_data_file_to_oss(bucket, 2000, 'data_file_{0}_historical_update.csv')
